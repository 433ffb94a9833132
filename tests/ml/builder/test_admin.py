"""The builder's Django admin pages are for admins; samples are read there, never edited."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from ml.builder.models import BuildStage, TaxonomyDomain
from tests.ml.builder.support import make_build, make_taxonomy
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db
PAGES = ("taxonomydomain", "taxonomysubcategory", "taxonomytopic", "build", "buildsample", "spotcheck")


def test_admins_use_the_builder_admin_and_others_cannot(client_for: Callable[[str], Client]) -> None:
    make_taxonomy()
    make_build("http://unused/v1")
    admin = client_for("admin")
    for page in PAGES:
        assert admin.get(reverse(f"admin:ml_{page}_changelist")).status_code == 200, page
    for name in ("annotator", "lead", "evaluator"):
        for page in PAGES:
            assert client_for(name).get(reverse(f"admin:ml_{page}_changelist")).status_code in (302, 403), (
                name,
                page,
            )
    assert admin.get(reverse("admin:ml_taxonomytopic_add")).status_code == 200


def test_a_studio_admin_who_is_not_a_superuser_sees_the_inlines(make_user: Callable[..., User]) -> None:
    make_taxonomy()
    build = make_build("http://unused/v1")
    BuildStage.objects.create(build=build, stage="queries")
    studio_admin = make_user(Role.ADMIN)
    assert not studio_admin.is_superuser
    client = Client()
    client.force_login(studio_admin)
    domain = TaxonomyDomain.objects.get(name="Family")
    page = client.get(reverse("admin:ml_taxonomydomain_change", args=[domain.pk])).content.decode()
    assert "Parents" in page and "Siblings" in page  # the subcategory inline, editable
    page = client.get(reverse("admin:ml_build_change", args=[build.pk])).content.decode()
    assert "queries" in page  # the stage rows, read-only
