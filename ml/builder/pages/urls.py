from django.urls import path

from ml.builder.pages import api, views

app_name = "builder"

urlpatterns = [
    path("manage/builds/", views.build_list, name="builds"),
    path("manage/builds/new/", views.start_page, name="start"),
    path("manage/builds/<int:build_id>/", views.build_page, name="build"),
    path("manage/builds/<int:build_id>/draw/", views.draw_page, name="draw"),
    path("manage/builds/<int:build_id>/tighten/", views.tighten_page, name="tighten"),
    path("manage/builds/<int:build_id>/resume/", views.resume_page, name="resume"),
    path("manage/builds/<int:build_id>/export/", views.export_page, name="export"),
    path("api/builds/<int:pk>/", api.BuildDetailView.as_view(), name="api_build"),
    path("spot-checks/", views.spot_check_queue, name="spot_checks"),
    path("spot-checks/next/", views.spot_check_next, name="spot_check_next"),
    path("spot-checks/<int:check_id>/", views.spot_check_page, name="spot_check"),
]
