"""URLs of the labelling side: the annotator's queue and workbench, and the labelling API."""

from django.urls import URLPattern, path

from annotation.labelling import api, views

urlpatterns: list[URLPattern] = [
    path("annotate/", views.annotator_queue, name="annotator_queue"),
    path("annotate/<int:annotation_id>/", views.workbench, name="workbench"),
    path("annotate/<int:annotation_id>/window/", views.workbench_window, name="workbench_window"),
    path("annotate/<int:annotation_id>/autosave/", views.autosave, name="autosave"),
    path("annotate/<int:annotation_id>/submit/", views.submit, name="submit_annotation"),
    path("annotate/<int:annotation_id>/reopen/", views.reopen, name="reopen_annotation"),
    path("api/annotations/", api.AnnotationList.as_view(), name="api_annotations"),
    path("api/annotations/<int:pk>/", api.AnnotationDetail.as_view(), name="api_annotation"),
    path("api/annotations/<int:pk>/submit/", api.AnnotationSubmit.as_view(), name="api_annotation_submit"),
]
