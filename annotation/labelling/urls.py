"""URLs of the labelling side (workbench, adjudication, agreement, API), appended to annotation.urls."""

from django.urls import path

from annotation.gold import agreement_views
from annotation.gold import transfer_views as gold_views
from annotation.gold import views as adjudication_views
from annotation.labelling import api as labelling_api
from annotation.labelling import views as labelling_views

urlpatterns = [
    path("annotate/<int:annotation_id>/", labelling_views.workbench, name="workbench"),
    path("annotate/<int:annotation_id>/autosave/", labelling_views.autosave, name="autosave"),
    path("annotate/<int:annotation_id>/submit/", labelling_views.submit, name="submit_annotation"),
    path("annotate/<int:annotation_id>/reopen/", labelling_views.reopen, name="reopen_annotation"),
    path("adjudicate/assign/", adjudication_views.assign_waiting, name="assign_annotators"),
    path("adjudicate/drafts/", adjudication_views.start_drafts, name="start_drafts"),
    path("adjudicate/<int:item_id>/", adjudication_views.adjudicate, name="adjudicate"),
    path("adjudicate/<int:item_id>/fast-track/", adjudication_views.fast_track, name="fast_track"),
    path("agreement/", agreement_views.agreement_dashboard, name="agreement"),
    path("gold/", gold_views.gold_page, name="gold"),
    path("gold/export/", gold_views.start_export, name="start_gold_export"),
    path("gold/import/", gold_views.start_import, name="start_gold_import"),
    path("gold/export/<int:job_id>/download/", gold_views.download_export, name="download_gold_export"),
    path("api/annotations/", labelling_api.AnnotationList.as_view(), name="api_annotations"),
    path("api/annotations/<int:pk>/", labelling_api.AnnotationDetail.as_view(), name="api_annotation"),
    path(
        "api/annotations/<int:pk>/submit/",
        labelling_api.AnnotationSubmit.as_view(),
        name="api_annotation_submit",
    ),
]
