"""URLs of human listening studies (included from evaluation/urls.py, in the `evaluation` namespace)."""

from django.urls import include, path

from evaluation.studies import api, views

urlpatterns = [
    path("", include("evaluation.studies.crowd.urls")),
    path("rate/", views.evaluator_queue, name="evaluator_queue"),
    path("rate/studies/<uuid:public_id>/", views.rate_study, name="rate_study"),
    path("rate/samples/<uuid:public_id>/played", views.assignment_played, name="assignment_played"),
    path("rate/samples/<uuid:public_id>/rating", views.submit_assignment, name="submit_assignment"),
    path("rate/samples/<uuid:public_id>/turns/<int:turn>/played", views.turn_played, name="turn_played"),
    path("rate/samples/<uuid:public_id>/turns/<int:turn>/rating", views.submit_turn, name="submit_turn"),
    path("rate/slots/<uuid:public_id>/played", views.slot_played, name="slot_played"),
    path("rate/trials/<uuid:public_id>/answer", views.submit_trial_answer, name="submit_trial"),
    path("manage/studies/", views.study_list, name="study_list"),
    path("api/studies/", api.StudyListView.as_view(), name="api_studies"),
    path("api/studies/<int:pk>/", api.StudyDetailView.as_view(), name="api_study"),
    path("api/studies/<int:pk>/results/", api.StudyResultsView.as_view(), name="api_study_results"),
    path("manage/studies/new/", views.study_create, name="study_create"),
    path("manage/studies/<int:study_id>/", views.study_results, name="study_results"),
    path("manage/studies/<int:study_id>/clips/", views.study_clips, name="study_clips"),
    path("manage/studies/<int:study_id>/results.csv", views.study_results_csv, name="study_results_csv"),
    path("manage/studies/<int:study_id>/results.json", views.study_results_json, name="study_results_json"),
    path(
        "manage/studies/<int:study_id>/raters/<int:evaluator_id>/decision",
        views.rater_decision,
        name="rater_decision",
    ),
]
