"""URLs of human listening studies (included from evaluation/urls.py, in the `evaluation` namespace)."""

from django.urls import path

from evaluation.studies import views as study_views

urlpatterns = [
    path("rate/", study_views.evaluator_queue, name="evaluator_queue"),
    path("rate/studies/<uuid:public_id>/", study_views.rate_study, name="rate_study"),
    path("rate/samples/<uuid:public_id>/played", study_views.assignment_played, name="assignment_played"),
    path("rate/samples/<uuid:public_id>/rating", study_views.submit_assignment, name="submit_assignment"),
    path("manage/studies/", study_views.study_list, name="study_list"),
    path("manage/studies/new/", study_views.study_create, name="study_create"),
    path("manage/studies/<int:study_id>/", study_views.study_results, name="study_results"),
    path(
        "manage/studies/<int:study_id>/results.csv", study_views.study_results_csv, name="study_results_csv"
    ),
    path(
        "manage/studies/<int:study_id>/raters/<int:evaluator_id>/decision",
        study_views.rater_decision,
        name="rater_decision",
    ),
]
