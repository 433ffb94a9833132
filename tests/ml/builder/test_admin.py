"""The builder's Django admin pages are for admins; samples are read there, never edited."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from tests.ml.builder.support import make_build, make_taxonomy

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
