"""URLs of systems and output imports (included from evaluation/urls.py, in the `evaluation` namespace)."""

from django.urls import path

from evaluation.outputs import api, views

urlpatterns = [
    path("manage/systems/", views.system_list, name="system_list"),
    path("manage/systems/new/", views.system_create, name="system_create"),
    path("manage/systems/<int:system_id>/", views.system_edit, name="system_edit"),
    path("manage/systems/<int:system_id>/delete/", views.system_delete, name="system_delete"),
    path("manage/systems/<int:system_id>/import/", views.output_import, name="output_import"),
    path("api/systems/", api.SystemListView.as_view(), name="api_systems"),
    path("api/systems/<int:pk>/", api.SystemDetailView.as_view(), name="api_system"),
    path("api/systems/<int:pk>/outputs/", api.SystemOutputsView.as_view(), name="api_system_outputs"),
    path(
        "api/systems/<int:pk>/dialogues/",
        api.SystemDialogueOutputsView.as_view(),
        name="api_system_dialogues",
    ),
    path("manage/systems/<int:system_id>/dialogues/", views.dialogue_outputs, name="system_dialogues"),
]
