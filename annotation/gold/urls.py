"""URLs of the gold side: the adjudication queue and page, agreement, gold export and import."""

from django.urls import URLPattern, path

from annotation.gold import api, views
from annotation.gold.agreement import views as agreement_views
from annotation.gold.transfer import views as transfer_views

urlpatterns: list[URLPattern] = [
    path("adjudicate/", views.adjudication_queue, name="adjudication_queue"),
    path("adjudicate/assign/", views.assign_waiting, name="assign_annotators"),
    path("adjudicate/drafts/", views.start_drafts, name="start_drafts"),
    path("adjudicate/<int:item_id>/", views.adjudicate, name="adjudicate"),
    path("adjudicate/<int:item_id>/window/", views.adjudicate_window, name="adjudicate_window"),
    path("adjudicate/<int:item_id>/fast-track/", views.fast_track, name="fast_track"),
    path("agreement/", agreement_views.agreement_dashboard, name="agreement"),
    path("gold/", transfer_views.gold_page, name="gold"),
    path("gold/export/", transfer_views.start_export, name="start_gold_export"),
    path("gold/import/", transfer_views.start_import, name="start_gold_import"),
    path("gold/export/<int:job_id>/download/", transfer_views.download_export, name="download_gold_export"),
    path("gold/tiers/", transfer_views.tiers_download, name="tiers_download"),
    path("gold/tiers/import/", transfer_views.tier_import, name="tier_import"),
    path("gold/items/<int:item_id>/tiers/", transfer_views.item_tiers_download, name="item_tiers_download"),
]

# The REST API (annotation.gold.api): items with their current gold, current gold, the export.
urlpatterns += [
    path("api/items/<str:external_id>/", api.ItemDetailView.as_view(), name="api_item"),
    path("api/gold/", api.GoldListView.as_view(), name="api_gold"),
    path("api/gold/export/", api.GoldExportView.as_view(), name="api_gold_export"),
]
