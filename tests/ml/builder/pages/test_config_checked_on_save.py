"""A build configuration saved in Django admin is checked by the rule the builder runs it with;
what admin accepts, the build page shows."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from ml.builder.models import Build
from tests.ml.builder.support import build_config, make_build

pytestmark = pytest.mark.django_db
LLM = "http://llm:8000/v1"


def _form(build: Build | None, config: object) -> dict[str, Any]:
    """Return the admin change form's fields for `build` (or a new one) with `config` as typed."""
    return {
        "name": build.name if build else "from admin",
        "single_turn_count": 4,
        "dialogue_count": 1,
        "turns_per_dialogue": 5,
        "seed": 3,
        "config": config if isinstance(config, str) else json.dumps(config),
        "export_path": "",
        "stages-TOTAL_FORMS": 0,
        "stages-INITIAL_FORMS": 0,
        "stages-MIN_NUM_FORMS": 0,
        "stages-MAX_NUM_FORMS": 1000,
    }


@pytest.fixture
def admin(client_for: Callable[[str], Client]) -> Client:
    return client_for("admin")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"note": "try again tomorrow"}, "This configuration cannot run: unknown setting(s): note."),
        (
            {"endpoints": [{"base_url": "javascript:alert(1)", "model": "m"}]},
            "must start with http:// or https://",
        ),
        ({"tts_backend": "openai", "tts_base_url": "file:///etc/passwd"}, "tts_base_url"),
        ({"batch_size": "many"}, "batch_size must be a whole number"),
    ],
)
def test_a_configuration_the_builder_would_refuse_is_refused_in_admin_with_its_reason(
    admin: Client, change: dict[str, Any], message: str
) -> None:
    build = make_build(LLM)
    stored = build.config
    response = admin.post(
        reverse("admin:ml_build_change", args=[build.pk]), _form(build, {**stored, **change})
    )
    assert response.status_code == 200  # the form again, not a redirect
    assert message in response.content.decode()
    build.refresh_from_db()
    assert build.config == stored


def test_a_configuration_that_is_no_object_is_refused(admin: Client) -> None:
    response = admin.post(reverse("admin:ml_build_add"), _form(None, "[1, 2]"))
    assert "The configuration is a JSON object" in response.content.decode()
    assert not Build.objects.exists()


ACCEPTED = [
    build_config(LLM),
    {"endpoints": [{"base_url": "https://api.example.org/v1", "model": "m"}]},
    build_config(LLM, tts_backend="openai", tts_base_url="http://tts:8000/v1", voices=["alloy"]),
    build_config(
        LLM,
        consistency_method="endpoint",
        consistency_endpoint={"base_url": "http://audio-llm/v1", "model": "a"},
        consistency_min_confidence=1,
    ),
    build_config(LLM, consistency_method="local", consistency_model_path="/models/ser"),
    build_config(LLM, query_min_score=5, response_min_score=1, spot_check_rate=0, emotions=["sad"]),
]


@pytest.mark.parametrize("config", ACCEPTED)
def test_every_configuration_admin_accepts_opens_the_build_page(admin: Client, config: dict) -> None:
    response = admin.post(reverse("admin:ml_build_add"), _form(None, config))
    assert response.status_code == 302, response.content.decode()[:2000]
    build = Build.objects.get(name="from admin")
    assert build.config == config
    page = admin.get(reverse("ml:builder:build", args=[build.pk]))
    assert page.status_code == 200
    assert 'data-testid="threshold-query_min_score"' in page.content.decode()


def test_a_configuration_stored_before_the_check_is_named_on_the_page_not_a_500(admin: Client) -> None:
    build = make_build(LLM)
    Build.objects.filter(pk=build.pk).update(config={**build.config, "note": "x"})
    page = admin.get(reverse("ml:builder:build", args=[build.pk]))
    assert page.status_code == 200
    assert "configuration cannot run: unknown setting(s): note" in page.content.decode()
    tightened = admin.post(
        reverse("ml:builder:tighten", args=[build.pk]),
        {"setting": "query_min_score", "value": "4"},
        follow=True,
    )
    assert (
        tightened.status_code == 200 and "Not re-run: unknown setting(s): note" in tightened.content.decode()
    )
