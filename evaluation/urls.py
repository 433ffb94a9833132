from django.urls import include, path

from evaluation.studies import queue as views

app_name = "evaluation"

urlpatterns = [
    path("rate/", views.evaluator_queue, name="evaluator_queue"),
    path("", include("evaluation.studies.urls")),
    path("", include("evaluation.judging.urls")),
]
