"""URLs of the recording side: actors' scripts and takes, blind review, the admin's recording pages."""

from django.urls import URLPattern, path

from annotation.recording import api, views
from annotation.recording.consent import views as consent_views

urlpatterns: list[URLPattern] = [
    path("studio/", views.actor_queue, name="actor_queue"),
    path("consent/", consent_views.my_consent, name="my_consent"),
    path("manage/consent/", consent_views.consent_people, name="consent_people"),
    path("manage/consent/<int:user_id>/withdraw/", consent_views.withdraw_for, name="consent_withdraw_for"),
    path("studio/items/<str:external_id>/", views.record_item, name="record_item"),
    path("takes/<uuid:public_id>/", views.take_detail, name="take_detail"),
    path("takes/<uuid:public_id>/reviewers/", views.take_reviewers, name="take_reviewers"),
    path("takes/<uuid:public_id>/analyse/", views.take_reanalyse, name="take_reanalyse"),
    path("review/", views.review_queue, name="review_queue"),
    path("review/<uuid:review_id>/", views.review_take, name="review_take"),
    path("review/<uuid:review_id>/played/", views.review_played, name="review_played"),
    path("manage/items/import/", views.import_items_page, name="import_items"),
    path("manage/items/assign/", views.assign_items_page, name="assign_items"),
    path("manage/recording/", views.recording_dashboard, name="recording_dashboard"),
    path("api/items/", api.ItemListView.as_view(), name="api_items"),
    path("api/assignments/", api.AssignmentView.as_view(), name="api_assignments"),
    path("api/items/<str:external_id>/takes/", api.ItemTakesView.as_view(), name="api_item_takes"),
    path("api/reviews/", api.OpenReviewsView.as_view(), name="api_open_reviews"),
    path("api/reviews/<uuid:review_id>/played/", api.PlayedView.as_view(), name="api_review_played"),
    path("api/reviews/<uuid:review_id>/verdict/", api.VerdictView.as_view(), name="api_review_verdict"),
]
