"""The builder's pages, included in the ml app's URLs (namespace "ml")."""

from django.urls import path

from ml.builder import views

urlpatterns = [
    path("manage/builder/taxonomy/", views.taxonomy_page, name="builder_taxonomy"),
]
