from django.urls import include, path

from ml.builder.urls import urlpatterns as builder_urlpatterns
from ml.jobs import api, lineage_views, views

app_name = "ml"

urlpatterns = [
    path("", include("ml.builder.pages.urls")),
    path("manage/training/", views.training_home, name="training"),
    path("manage/training/start/<str:kind>/", views.start_job_page, name="start_job"),
    path("manage/training/jobs/<int:job_id>/", views.job_page, name="job"),
    path("api/jobs/", api.JobListView.as_view(), name="api_jobs"),
    path("api/jobs/<int:pk>/", api.JobDetailView.as_view(), name="api_job"),
    path("api/jobs/<int:pk>/cancel/", api.JobCancelView.as_view(), name="api_job_cancel"),
    path("manage/training/checkpoints/<int:checkpoint_id>/", views.checkpoint_page, name="checkpoint"),
    path("manage/lineage/people/<int:user_id>/", lineage_views.person_lineage_page, name="person_lineage"),
    path("manage/lineage/items/<int:item_id>/", lineage_views.item_lineage_page, name="item_lineage"),
    *builder_urlpatterns,
]
