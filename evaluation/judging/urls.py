"""URLs of judges, judge runs and rubric scoring by hand (included from evaluation/urls.py, in the
`evaluation` namespace)."""

from django.urls import path

from evaluation.judging import api, views

urlpatterns = [
    path("manage/judges/", views.judge_config_list, name="judge_config_list"),
    path("manage/judges/new/", views.judge_config_edit, name="judge_config_create"),
    path("manage/judges/<int:config_id>/", views.judge_config_edit, name="judge_config_edit"),
    path("manage/judge-runs/", views.judge_run_list, name="judge_run_list"),
    path("manage/judge-runs/<int:run_id>/", views.judge_run_detail, name="judge_run_detail"),
    path("manage/judge-runs/<int:run_id>/again/", views.judge_run_rerun, name="judge_run_rerun"),
    path("api/judges/", api.JudgeListView.as_view(), name="api_judges"),
    path("api/judge-runs/", api.JudgeRunListView.as_view(), name="api_judge_runs"),
    path("api/judge-runs/<int:pk>/", api.JudgeRunDetailView.as_view(), name="api_judge_run"),
    path("api/judge-runs/<int:pk>/cancel/", api.JudgeRunCancelView.as_view(), name="api_judge_run_cancel"),
    path("api/judge-runs/<int:pk>/results/", api.JudgeRunResultsView.as_view(), name="api_judge_run_results"),
    path("manage/rubric-samples/", views.rubric_sample_list, name="rubric_sample_list"),
    path("manage/rubric-samples/<int:sample_id>/", views.rubric_sample_detail, name="rubric_sample_detail"),
    path("rate/rubric/", views.my_rubric_samples, name="my_rubric_samples"),
    path("rate/rubric/<int:sample_id>/next/", views.rubric_next, name="rubric_next"),
    path("rate/rubric/<int:sample_id>/<uuid:public_id>/", views.rubric_score, name="rubric_score"),
]
