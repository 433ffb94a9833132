"""URLs of the results pages (included from evaluation/urls.py, in the `evaluation` namespace)."""

from django.urls import path

from evaluation.results import api, views

urlpatterns = [
    path("results/leaderboard/", views.leaderboard, name="leaderboard"),
    path("results/leaderboard/measure-audio/", views.measure_audio, name="measure_audio"),
    path("results/leaderboard.csv", views.leaderboard_export, {"fmt": "csv"}, name="leaderboard_csv"),
    path("results/leaderboard.tex", views.leaderboard_export, {"fmt": "tex"}, name="leaderboard_tex"),
    path("results/error-propagation/", views.error_propagation, name="error_propagation"),
    path("results/items/", views.item_list, name="item_list"),
    path("results/items/<int:item_id>/", views.item_detail, name="item_detail"),
    path("results/outputs/", views.output_metrics, name="output_metrics"),
    path("results/agreement/", views.agreement, name="agreement"),
    path("results/judge-audits/", views.judge_audits, name="judge_audits"),
    path("results/judge-audits/<int:audit_id>/", views.judge_audit, name="judge_audit"),
    path("api/leaderboard/", api.LeaderboardView.as_view(), name="api_leaderboard"),
    path("api/leaderboard/csv/", api.LeaderboardExportView.as_view(fmt="csv"), name="api_leaderboard_csv"),
    path(
        "api/leaderboard/latex/", api.LeaderboardExportView.as_view(fmt="tex"), name="api_leaderboard_latex"
    ),
    path("api/error-propagation/", api.ErrorPropagationView.as_view(), name="api_error_propagation"),
]
