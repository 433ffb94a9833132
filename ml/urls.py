from django.urls import path

from ml.jobs import views

app_name = "ml"

urlpatterns = [
    path("manage/training/", views.training_home, name="training"),
    path("manage/training/start/<str:kind>/", views.start_job_page, name="start_job"),
    path("manage/training/jobs/<int:job_id>/", views.job_page, name="job"),
    path("manage/training/checkpoints/<int:checkpoint_id>/", views.checkpoint_page, name="checkpoint"),
]
