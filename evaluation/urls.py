"""The evaluation app's URLs, one include per workflow subpackage, all in the `evaluation` namespace."""

from django.urls import include, path

app_name = "evaluation"

urlpatterns = [
    path("", include("evaluation.studies.urls")),
    path("", include("evaluation.outputs.urls")),
    path("", include("evaluation.judging.urls")),
    path("", include("evaluation.results.urls")),
    path("", include("evaluation.echomind.urls")),
]
