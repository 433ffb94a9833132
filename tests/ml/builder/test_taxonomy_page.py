"""The taxonomy page is for admins; an import stores all of a file or none of it, with the problems shown."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from ml.builder.models import TaxonomyTopic

pytestmark = pytest.mark.django_db
URL = "ml:builder_taxonomy"


def _upload(*lines: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("taxonomy.jsonl", "\n".join(lines).encode(), content_type="application/jsonl")


def _line(topic: str) -> str:
    return json.dumps({"domain": "Work", "subcategory": "Career", "topic": topic})


def test_anonymous_visitors_log_in_and_other_roles_are_refused(client_for: Callable[[str], Client]) -> None:
    assert Client().get(reverse(URL))["Location"].startswith(reverse("login"))
    for name in ("actor", "reviewer", "annotator", "lead", "evaluator", "norole"):
        client = client_for(name)
        assert client.get(reverse(URL)).status_code == 403, name
        assert client.post(reverse(URL), {"file": _upload(_line("x"))}).status_code == 403, name
    assert not TaxonomyTopic.objects.exists()


def test_an_admin_imports_a_file_and_sees_the_counts(client_for: Callable[[str], Client]) -> None:
    client = client_for("admin")
    response = client.post(
        reverse(URL), {"file": _upload(_line("layoffs"), _line("a missed promotion"))}, follow=True
    )
    assert "2 topics created" in response.content.decode()
    assert "<td>Work</td><td>Career</td><td>2</td><td>2</td>" in response.content.decode()


def test_a_file_with_one_bad_line_stores_nothing_and_names_the_line(
    client_for: Callable[[str], Client],
) -> None:
    response = client_for("admin").post(reverse(URL), {"file": _upload(_line("layoffs"), "{oops")})
    html = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was imported." in html and "line 2: not JSON" in html
    assert not TaxonomyTopic.objects.exists()


def test_an_admin_adds_one_topic(client_for: Callable[[str], Client]) -> None:
    client_for("admin").post(reverse(URL), {"domain": "Family", "subcategory": "Parents", "topic": "illness"})
    assert TaxonomyTopic.objects.get().path == "Family / Parents / illness"
