from django.urls import path

from annotation.labelling import queues as views
from annotation.labelling.urls import urlpatterns as labelling_urlpatterns
from annotation.recording import api as recording_api
from annotation.recording import views as recording_views

app_name = "annotation"

urlpatterns = [
    path("studio/", recording_views.actor_queue, name="actor_queue"),
    path("studio/items/<str:external_id>/", recording_views.record_item, name="record_item"),
    path("takes/<uuid:public_id>/", recording_views.take_detail, name="take_detail"),
    path("takes/<uuid:public_id>/reviewers/", recording_views.take_reviewers, name="take_reviewers"),
    path("takes/<uuid:public_id>/analyse/", recording_views.take_reanalyse, name="take_reanalyse"),
    path("review/", recording_views.review_queue, name="review_queue"),
    path("review/<int:review_id>/", recording_views.review_take, name="review_take"),
    path("manage/items/import/", recording_views.import_items_page, name="import_items"),
    path("manage/items/assign/", recording_views.assign_items_page, name="assign_items"),
    path("manage/recording/", recording_views.recording_dashboard, name="recording_dashboard"),
    path("api/items/<str:external_id>/takes/", recording_api.ItemTakesView.as_view(), name="api_item_takes"),
    path("api/reviews/", recording_api.OpenReviewsView.as_view(), name="api_open_reviews"),
    path(
        "api/reviews/<int:review_id>/verdict/", recording_api.VerdictView.as_view(), name="api_review_verdict"
    ),
    path("annotate/", views.annotator_queue, name="annotator_queue"),
    path("adjudicate/", views.adjudication_queue, name="adjudication_queue"),
]
urlpatterns += labelling_urlpatterns
