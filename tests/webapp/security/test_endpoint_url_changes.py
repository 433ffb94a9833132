"""Changing an endpoint's URL is recorded: who, when, the old URL and the new one (judge pages and a
build's configuration in Django admin)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from ml.builder.models import Build
from webapp.models import EndpointUrlChange

pytestmark = pytest.mark.django_db

FORM = {"name": "lab", "model": "m", "max_retries": 1, "temperature": 0}


def test_a_judge_url_change_is_recorded_with_who_and_what(client_for, users) -> None:
    admin = client_for("admin")
    admin.post(reverse("evaluation:judge_config_create"), {**FORM, "base_url": "https://api.one.example/v1"})
    config = JudgeConfig.objects.get(name="lab")
    admin.post(
        reverse("evaluation:judge_config_edit", args=[config.pk]),
        {**FORM, "base_url": "https://api.two.example/v1"},
    )
    admin.post(  # saved again unchanged: nothing new to record
        reverse("evaluation:judge_config_edit", args=[config.pk]),
        {**FORM, "base_url": "https://api.two.example/v1"},
    )
    changes = list(EndpointUrlChange.objects.order_by("pk"))
    assert [(c.endpoint, c.old_url, c.new_url, c.changed_by) for c in changes] == [
        ("judge lab: base_url", "", "https://api.one.example/v1", users["admin"]),
        ("judge lab: base_url", "https://api.one.example/v1", "https://api.two.example/v1", users["admin"]),
    ]
    assert all(change.changed_at is not None for change in changes)


def test_a_refused_url_is_not_saved_nor_recorded(client_for, strict_outbound) -> None:
    response = client_for("admin").post(
        reverse("evaluation:judge_config_create"), {**FORM, "base_url": "http://127.0.0.1:6379/"}
    )
    assert response.status_code == 200 and "internal address" in response.content.decode()
    assert not JudgeConfig.objects.exists() and not EndpointUrlChange.objects.exists()


def test_a_build_tts_url_changed_in_django_admin_is_recorded(client_for, users) -> None:
    config = {"endpoints": [{"base_url": "https://llm.example/v1", "model": "m"}]}
    build = Build.objects.create(name="b", config=config)
    changed = {**config, "tts_backend": "openai", "tts_base_url": "https://tts.example/v1"}
    response = client_for("admin").post(
        reverse("admin:ml_build_change", args=[build.pk]),
        {
            "name": "b",
            "single_turn_count": 0,
            "dialogue_count": 0,
            "turns_per_dialogue": 5,
            "seed": 0,
            "config": json.dumps(changed),
            "stages-TOTAL_FORMS": 0,
            "stages-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    change = EndpointUrlChange.objects.get()
    assert (change.endpoint, change.old_url, change.new_url, change.changed_by) == (
        "build b: tts_base_url",
        "",
        "https://tts.example/v1",
        users["admin"],
    )
