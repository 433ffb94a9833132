from django.urls import path

from annotation import views

app_name = "annotation"

urlpatterns = [
    path("studio/", views.actor_queue, name="actor_queue"),
    path("review/", views.review_queue, name="review_queue"),
    path("annotate/", views.annotator_queue, name="annotator_queue"),
    path("adjudicate/", views.adjudication_queue, name="adjudication_queue"),
]
