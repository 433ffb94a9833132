from django.urls import include, path

from evaluation import views

app_name = "evaluation"

urlpatterns = [
    path("rate/", views.evaluator_queue, name="evaluator_queue"),
    path("", include("evaluation.study_urls")),
    path("", include("evaluation.judging_urls")),
]
