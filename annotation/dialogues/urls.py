"""URLs of dialogues: pages for admins and actors, and the dialogue API."""

from django.urls import URLPattern, path

from annotation.dialogues import api, views

urlpatterns: list[URLPattern] = [
    path("dialogues/", views.dialogue_list, name="dialogue_list"),
    path("dialogues/import/", views.import_dialogues_page, name="import_dialogues"),
    path("dialogues/export.jsonl", views.export_dialogues_download, name="export_dialogues"),
    path("dialogues/<str:external_id>/", views.dialogue_detail, name="dialogue_detail"),
    path("dialogues/<str:external_id>/preview/", views.dialogue_preview, name="dialogue_preview"),
    path("api/dialogues/", api.DialogueListView.as_view(), name="api_dialogues"),
    path("api/dialogues/export/", api.DialogueExportView.as_view(), name="api_dialogue_export"),
    path("api/dialogues/<str:external_id>/", api.DialogueDetailView.as_view(), name="api_dialogue_detail"),
]
