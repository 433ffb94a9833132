"""URLs of crowd studies (included from evaluation/studies/urls.py, in the `evaluation` namespace).

The rater's pages live under the link's random token; the admin's under the study's id."""

from django.urls import path

from evaluation.studies.crowd import views

urlpatterns = [
    path("crowd/<str:token>/", views.entry, name="crowd_entry"),
    path("crowd/<str:token>/study", views.step, name="crowd_step"),
    path("crowd/<str:token>/consent", views.consent, name="crowd_consent"),
    path(
        "crowd/<str:token>/checks/<str:test>/<int:number>.wav", views.screen_audio, name="crowd_screen_audio"
    ),
    path("crowd/<str:token>/checks/<str:test>", views.screen_answer, name="crowd_screen_answer"),
    path("crowd/<str:token>/samples/<uuid:public_id>/played", views.played, name="crowd_played"),
    path("crowd/<str:token>/samples/<uuid:public_id>/rating", views.submit, name="crowd_submit"),
    path("crowd/<str:token>/slots/<uuid:public_id>/played", views.slot_played, name="crowd_slot_played"),
    path("crowd/<str:token>/trials/<uuid:public_id>/answer", views.submit_answer, name="crowd_submit_trial"),
    path(
        "crowd/<str:token>/samples/<uuid:public_id>/turns/<int:turn>/played",
        views.turn_played,
        name="crowd_turn_played",
    ),
    path(
        "crowd/<str:token>/samples/<uuid:public_id>/turns/<int:turn>/rating",
        views.submit_turn,
        name="crowd_submit_turn",
    ),
    path("manage/studies/<int:study_id>/crowd/", views.crowd_admin, name="crowd_admin"),
    path("manage/studies/<int:study_id>/crowd/payments.csv", views.payment_sheet, name="crowd_payments"),
    path("manage/studies/<int:study_id>/crowd/bonuses.csv", views.bulk_bonus, name="crowd_bonuses"),
]
