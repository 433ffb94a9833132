"""A judge configuration reads its API key only from ECHOSTUDIO_JUDGE_KEY_* variables or the
settings, never from any variable a database row names (an admin once named DJANGO_SECRET_KEY
and a URL of their choice, and got the secret key sent there as a bearer token)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.judging.forms import JudgeConfigForm
from evaluation.judging.models import JudgeConfig
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory, rubric_judge
from tests.factories import ModelOutputFactory
from tests.support.fake_chat_server import running_chat_server
from webapp.jobs import run_job
from webapp.lib.outbound import KeyVariableRefused, api_key_from_environment, key_variable_problem
from webapp.models import JobStatus

pytestmark = pytest.mark.usefixtures("media_root")


@pytest.mark.parametrize(
    "name",
    ["DJANGO_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "ECHOSTUDIO_JUDGE_KEY_", "echostudio_judge_key_x", "PATH"],
)
def test_only_the_prefix_may_hold_keys(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, "secret-value")
    assert key_variable_problem(name) is not None
    with pytest.raises(KeyVariableRefused, match="ECHOSTUDIO_JUDGE_KEY_"):
        api_key_from_environment(name)


def test_a_prefixed_variable_gives_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECHOSTUDIO_JUDGE_KEY_LAB", "sk-lab")
    assert key_variable_problem("ECHOSTUDIO_JUDGE_KEY_LAB") is None
    assert api_key_from_environment("ECHOSTUDIO_JUDGE_KEY_LAB") == "sk-lab"


def test_the_form_refuses_another_variable_with_a_clear_message(db: None) -> None:
    form = JudgeConfigForm(
        {
            "name": "evil",
            "base_url": "https://attacker.example/v1",
            "api_key_env": "DJANGO_SECRET_KEY",
            "max_retries": 1,
            "temperature": 0,
        }
    )
    assert not form.is_valid()
    assert "ECHOSTUDIO_JUDGE_KEY_" in form.errors["api_key_env"][0]
    good = JudgeConfigForm(
        {"name": "lab", "api_key_env": "ECHOSTUDIO_JUDGE_KEY_LAB", "max_retries": 1, "temperature": 0}
    )
    assert good.is_valid(), good.errors


def test_the_page_saves_nothing_for_a_refused_variable(client_for: Callable[[str], Client]) -> None:
    response = client_for("admin").post(
        reverse("evaluation:judge_config_create"),
        {
            "name": "evil",
            "base_url": "https://attacker.example/v1",
            "api_key_env": "DJANGO_SECRET_KEY",
            "max_retries": 1,
            "temperature": 0,
        },
    )
    assert response.status_code == 200
    assert b"ECHOSTUDIO_JUDGE_KEY_" in response.content
    assert not JudgeConfig.objects.exists()


def _judge(config: JudgeConfig, system: System) -> tuple[str, str]:
    run = start_judge_run(system, "echoeval-v1", config, started_by=None)
    assert run.job is not None
    run_job(run.job.pk)
    run.job.refresh_from_db()
    return run.job.status, run.job.error


def test_a_row_naming_another_variable_sends_nothing(db: None, settings) -> None:
    system = System.objects.create(name="Omni-X")
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    with running_chat_server(rubric_judge()) as server:
        # Saved without a form (an old row, a script): the client refuses when the run starts.
        config = JudgeConfig.objects.create(
            name="evil", base_url=server.base_url, model="judge-model", api_key_env="DJANGO_SECRET_KEY"
        )
        status, error = _judge(config, system)
    assert status == JobStatus.FAILED
    assert "ECHOSTUDIO_JUDGE_KEY_" in error
    assert server.requests == []
    assert settings.SECRET_KEY not in error


def test_an_allowed_variable_is_sent_as_the_bearer_token(
    db: None, monkeypatch: pytest.MonkeyPatch, settings
) -> None:
    monkeypatch.setenv("ECHOSTUDIO_JUDGE_KEY_LAB", "sk-lab-123")
    system = System.objects.create(name="Omni-X")
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    with running_chat_server(rubric_judge()) as server:
        settings.OUTBOUND_KEY_HOSTS = {"ECHOSTUDIO_JUDGE_KEY_LAB": server.base_url}
        config = JudgeConfig.objects.create(
            name="lab", base_url=server.base_url, model="judge-model", api_key_env="ECHOSTUDIO_JUDGE_KEY_LAB"
        )
        status, error = _judge(config, system)
    assert status == JobStatus.SUCCEEDED, error
    assert server.requests
    assert {request.headers.get("Authorization") for request in server.requests} == {"Bearer sk-lab-123"}
