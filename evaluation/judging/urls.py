"""URLs of systems, judging and results (included from evaluation/urls.py, in the `evaluation` namespace)."""

from django.urls import path

from evaluation.judging import views

urlpatterns = [
    path("manage/systems/", views.system_list, name="system_list"),
    path("manage/systems/new/", views.system_create, name="system_create"),
    path("manage/systems/<int:system_id>/", views.system_edit, name="system_edit"),
    path("manage/systems/<int:system_id>/delete/", views.system_delete, name="system_delete"),
    path("manage/systems/<int:system_id>/import/", views.output_import, name="output_import"),
    path("manage/judges/", views.judge_config_list, name="judge_config_list"),
    path("manage/judges/new/", views.judge_config_edit, name="judge_config_create"),
    path("manage/judges/<int:config_id>/", views.judge_config_edit, name="judge_config_edit"),
    path("manage/judge-runs/", views.judge_run_list, name="judge_run_list"),
    path("manage/judge-runs/<int:run_id>/", views.judge_run_detail, name="judge_run_detail"),
    path("manage/judge-runs/<int:run_id>/again/", views.judge_run_rerun, name="judge_run_rerun"),
    path("manage/rubric-samples/", views.rubric_sample_list, name="rubric_sample_list"),
    path("manage/rubric-samples/<int:sample_id>/", views.rubric_sample_detail, name="rubric_sample_detail"),
    path("results/leaderboard/", views.leaderboard, name="leaderboard"),
    path("results/leaderboard.csv", views.leaderboard_export, {"fmt": "csv"}, name="leaderboard_csv"),
    path("results/leaderboard.tex", views.leaderboard_export, {"fmt": "tex"}, name="leaderboard_tex"),
    path("results/error-propagation/", views.error_propagation, name="error_propagation"),
    path("results/items/", views.item_list, name="item_list"),
    path("results/items/<int:item_id>/", views.item_detail, name="item_detail"),
    path("results/agreement/", views.agreement, name="agreement"),
    path("rate/rubric/", views.my_rubric_samples, name="my_rubric_samples"),
    path("rate/rubric/<int:sample_id>/next/", views.rubric_next, name="rubric_next"),
    path("rate/rubric/<int:sample_id>/<uuid:public_id>/", views.rubric_score, name="rubric_score"),
]
