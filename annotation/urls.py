"""The annotation app's URLs (namespace `annotation`): each workflow's list, in pipeline order."""

from django.urls import URLPattern, path

from annotation.demo import views as demo_views
from annotation.dialogues.urls import urlpatterns as dialogue_urlpatterns
from annotation.gold.urls import urlpatterns as gold_urlpatterns
from annotation.labelling.urls import urlpatterns as labelling_urlpatterns
from annotation.recording import overview
from annotation.recording.urls import urlpatterns as recording_urlpatterns

app_name = "annotation"

urlpatterns: list[URLPattern] = [
    path("manage/", overview.admin_dashboard, name="admin_dashboard"),
    path("manage/demo/resynthesize/", demo_views.start_demo_resynthesis, name="start_demo_resynthesis"),
    *recording_urlpatterns,
    *dialogue_urlpatterns,
    *labelling_urlpatterns,
    *gold_urlpatterns,
]
