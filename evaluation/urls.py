from django.urls import path

from evaluation import views

app_name = "evaluation"

urlpatterns = [
    path("rate/", views.evaluator_queue, name="evaluator_queue"),
]
