"""URLs of the EchoMind pages and API (included from evaluation/urls.py, `evaluation` namespace)."""

from django.urls import path

from evaluation.echomind import api, views

urlpatterns = [
    path("echomind/", views.delivery_sets, name="echomind_sets"),
    path("echomind/assign/", views.assign_deliveries, name="echomind_assign"),
    path("echomind/imports/<int:import_id>/", views.import_report, name="echomind_import"),
    path("echomind/mix/", views.mix_delivery, name="echomind_mix"),
    path("echomind/answers/", views.answers_import, name="echomind_answers"),
    path("echomind/judge/", views.judge, name="echomind_judge"),
    path("echomind/export.zip", views.export, name="echomind_export"),
    path("echomind/sets/<int:set_id>/questions/", views.questions, name="echomind_questions"),
    path("echomind/questions/<int:question_id>/", views.question_edit, name="echomind_question_edit"),
    path(
        "echomind/questions/<int:question_id>/delete/", views.question_delete, name="echomind_question_delete"
    ),
    path("echomind/quality/", views.measure_quality, name="echomind_quality"),
    path("echomind/studies/new/", views.reply_study, name="echomind_reply_study"),
    path("echomind/taxonomy/", views.taxonomy_page, name="echomind_taxonomy"),
    path("echomind/leaderboard/", views.leaderboard, name="echomind_leaderboard"),
    path(
        "echomind/leaderboard.csv", views.leaderboard_export, {"fmt": "csv"}, name="echomind_leaderboard_csv"
    ),
    path(
        "echomind/leaderboard.tex", views.leaderboard_export, {"fmt": "tex"}, name="echomind_leaderboard_tex"
    ),
    path("api/echomind/leaderboard/", api.EchoMindLeaderboardView.as_view(), name="api_echomind_leaderboard"),
    path("api/echomind/imports/", api.EchoMindImportView.as_view(), name="api_echomind_imports"),
    path(
        "api/echomind/imports/<int:import_id>/",
        api.EchoMindImportReportView.as_view(),
        name="api_echomind_import",
    ),
    path(
        "api/echomind/leaderboard/csv/",
        api.EchoMindLeaderboardExportView.as_view(fmt="csv"),
        name="api_echomind_leaderboard_csv",
    ),
    path(
        "api/echomind/leaderboard/latex/",
        api.EchoMindLeaderboardExportView.as_view(fmt="tex"),
        name="api_echomind_leaderboard_latex",
    ),
]
