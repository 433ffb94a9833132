"""The "Start a build" page: admins only, the arguments of `manage.py start_build`, checked by the
same code (ml.builder.launch), so the page and the command refuse a configuration in the same words."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from ml.builder.launch import default_config_text
from ml.builder.models import Build, BuildStage
from webapp.models import Job

pytestmark = pytest.mark.django_db

GOOD = {"endpoints": [{"base_url": "http://llm:8000/v1", "model": "m"}], "query_min_score": 4}
# Each is refused by BuildConfig.from_json or by parsing; the words are the user's only guide.
BAD = {
    "no endpoint": ({"endpoints": []}, "list at least one LLM endpoint"),
    "unknown setting": ({**GOOD, "batchsize": 5}, "unknown setting(s): batchsize"),
    "out of range": ({**GOOD, "query_min_score": 9}, "filter scores are on a 1-5 scale"),
    "wrong type": ({**GOOD, "shards": "two"}, "shards must be a whole number"),
    "a key pasted": (
        {"endpoints": [{"base_url": "http://llm:8000/v1", "model": "m", "api_key_env": "sk-live-123"}]},
        "ECHOSTUDIO_JUDGE_KEY_",
    ),
}


def post(client, config: object, name: str = "pilot", **extra: str):
    text = config if isinstance(config, str) else json.dumps(config)
    data = {"name": name, "single": "20", "dialogues": "2", "seed": "7", "config": text, **extra}
    return client.post(reverse("ml:builder:start"), data)


def page_errors(html: str) -> str:
    match = re.search(r'data-testid="form-errors">(.*?)</ul>', html, re.S)
    assert match, "no form errors shown"
    return unescape(re.sub(r"<[^>]+>", " ", match.group(1))).strip()


@pytest.mark.parametrize("name", ["actor", "reviewer", "annotator", "lead", "evaluator", "norole"])
def test_only_admins_may_start_a_build(client_for, name, queued_here) -> None:
    client = client_for(name)
    assert client.get(reverse("ml:builder:start")).status_code == 403
    assert post(client, GOOD).status_code == 403
    assert not Build.objects.exists()


def test_the_form_opens_with_the_documented_defaults(client_for) -> None:
    html = client_for("admin").get(reverse("ml:builder:start")).content.decode()
    textarea = re.search(r'<textarea name="config"[^>]*>(.*?)</textarea>', html, re.S)
    assert textarea
    opened = json.loads(unescape(textarea.group(1)))
    assert opened == json.loads(default_config_text())
    assert opened["query_min_score"] == 3 and opened["spot_check_rate"] == 0.02
    # The builds list links here.
    assert (
        reverse("ml:builder:start") in client_for("admin").get(reverse("ml:builder:builds")).content.decode()
    )


def test_a_good_configuration_starts_the_build_and_opens_its_page(client_for, users, queued_here) -> None:
    response = post(client_for("admin"), GOOD)
    build = Build.objects.get(name="pilot")
    assert response.status_code == 302
    assert response["Location"] == reverse("ml:builder:build", args=[build.pk])
    assert (build.status, build.single_turn_count, build.dialogue_count, build.seed) == ("running", 20, 2, 7)
    assert build.config["query_min_score"] == 4 and build.created_by == users["admin"]
    assert BuildStage.objects.filter(build=build).exists()
    job = Job.objects.get()
    assert job.parameters == {"build": build.pk, "stage": "plan", "shard": 0}
    assert job.started_by == users["admin"]


def test_the_pre_filled_defaults_with_a_real_endpoint_start_a_build(client_for, queued_here) -> None:
    config = json.loads(default_config_text())
    config["endpoints"][0]["base_url"] = "http://llm:8000/v1"
    post(client_for("admin"), config)
    assert Build.objects.get(name="pilot").config["voices"][0] == "en-us"  # eSpeak names chosen


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_configuration_is_explained_and_creates_nothing(client_for, case, queued_here) -> None:
    config, words = BAD[case]
    response = post(client_for("admin"), config)
    assert response.status_code == 200
    errors = page_errors(response.content.decode())
    assert errors.startswith("Not started:") and words in errors
    assert not Build.objects.exists() and not Job.objects.exists()
    # What was typed stays in the form, to be corrected rather than retyped.
    kept = re.search(r"<textarea[^>]*>(.*?)</textarea>", response.content.decode(), re.S)
    assert kept and unescape(kept.group(1)).strip() == json.dumps(config)


@pytest.mark.parametrize(
    ("text", "words"),
    [("{not json", "the configuration is not valid JSON"), ("[1, 2]", "a JSON object of settings")],
)
def test_text_that_is_not_a_settings_object_is_explained(client_for, text, words, queued_here) -> None:
    assert words in page_errors(post(client_for("admin"), text).content.decode())
    assert not Build.objects.exists()


def test_a_taken_name_is_refused(client_for, queued_here) -> None:
    post(client_for("admin"), GOOD)
    errors = page_errors(post(client_for("admin"), GOOD, name=" pilot ").content.decode())
    assert "a build named 'pilot' exists already" in errors
    assert Build.objects.count() == 1


@pytest.mark.parametrize("case", sorted(BAD))
def test_the_command_and_the_page_refuse_with_the_same_message(
    client_for, case, tmp_path: Path, queued_here
) -> None:
    config, _ = BAD[case]
    path = tmp_path / "build.json"
    path.write_text(json.dumps(config))
    with pytest.raises(CommandError) as refused:
        call_command("start_build", "pilot", "--config", str(path))
    page = page_errors(post(client_for("admin"), config).content.decode())
    assert page == f"Not started: {refused.value}."
    assert not Build.objects.exists()
