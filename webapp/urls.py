from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from webapp import docs, storage, views
from webapp.api import views as api_views
from webapp.api.schema import SchemaView

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/keyboard/", views.keyboard_settings, name="keyboard_settings"),
    path("accounts/tokens/", api_views.api_tokens, name="api_tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", api_views.api_token_revoke, name="api_token_revoke"),
    path("manage/jobs/", views.job_list, name="job_list"),
    path("manage/jobs/<int:job_id>/", views.job_detail, name="job_detail"),
    path("manage/jobs/<int:job_id>/cancel/", views.job_cancel, name="job_cancel"),
    path("media/a/<str:token>", storage.serve_signed_media, name="signed_media"),
    path("api/schema/", SchemaView.as_view(), name="api_schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api_schema"), name="api_docs"),
    path("docs/", docs.docs_index, name="docs_index"),
    path("docs/<slug:page_name>/", docs.docs_page, name="docs_page"),
    path("", include("annotation.urls")),
    path("", include("evaluation.urls")),
    path("", include("ml.urls")),
    path("django-admin/", admin.site.urls),
]

# Unknown /api/ addresses and server errors answer in the API's error shape; pages keep theirs.
handler404 = "webapp.api.errors.api_not_found"
handler500 = "webapp.api.errors.api_server_error"
