"""No key leaves for a host it was not meant for: every endpoint an admin or a build configures
(judge, draft LLM, builder LLM, classifier, TTS) pointing at an internal address is refused when
saved and when called, a configured key reaches only its own host, and the operator's setting
lets a local judge work again. The listeners are real servers on 127.0.0.1; `strict_outbound`
puts the production default back (the test suite otherwise allows that one host)."""

from __future__ import annotations

import pytest

from annotation.audio.tts import TtsError, speak_in_style
from annotation.labelling.drafts import draft_config
from evaluation.judging.forms import JudgeConfigForm
from evaluation.judging.models import JudgeConfig
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from ml.builder.config import BuildConfig, Endpoint
from ml.builder.llm import endpoint_client
from ml.builder.models import Build
from ml.builder.steps.audio_steps import AudioStepContext, voice_response
from ml.jobs.voicing import configured_tts
from tests.evaluation.judging_support import BenchmarkItemFactory, rubric_judge
from tests.factories import ModelOutputFactory
from tests.support.fake_chat_server import json_reply, running_chat_server
from tests.support.fake_speech_server import running_speech_server
from webapp.jobs import run_job
from webapp.lib.llm_client import JudgeClient
from webapp.models import JobStatus
from webapp.outbound import OutboundRefused, check_outbound_url

pytestmark = pytest.mark.usefixtures("media_root")
PROMPT = [{"role": "user", "content": "hello"}]
INTERNAL = [
    "http://127.0.0.1:6379/",
    "http://[::1]:8130/v1",
    "http://169.254.169.254/v1",
    "http://10.0.0.5/v1",
]


def _judge(config: JudgeConfig) -> tuple[str, str]:
    system = System.objects.create(name="Omni-X")
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    run = start_judge_run(system, "echoeval-v1", config, started_by=None)
    assert run.job is not None
    run_job(run.job.pk)
    run.job.refresh_from_db()
    return run.job.status, run.job.error


def _form(base_url: str, **extra: object) -> JudgeConfigForm:
    return JudgeConfigForm(
        {"name": "j", "base_url": base_url, "model": "m", "max_retries": 0, "temperature": 0, **extra}
    )


@pytest.mark.usefixtures("strict_outbound")
@pytest.mark.parametrize("url", INTERNAL)
def test_a_judge_at_an_internal_address_is_refused_on_save(db: None, url: str) -> None:
    form = _form(url)
    assert not form.is_valid()
    assert "internal address" in form.errors["base_url"][0]
    with pytest.raises(OutboundRefused):
        check_outbound_url(url)  # the one check every form and admin calls


@pytest.mark.usefixtures("strict_outbound")
def test_a_judge_at_an_internal_address_is_refused_on_call(db: None, settings) -> None:
    settings.JUDGE_API_KEY = "sk-deploy"
    with running_chat_server(rubric_judge()) as server:
        settings.JUDGE_BASE_URL = server.base_url  # even the deployment's own judge URL is checked
        config = JudgeConfig.objects.create(name="saved-before", base_url=server.base_url, model="m")
        status, error = _judge(config)
    assert status == JobStatus.FAILED
    assert "internal address" in error
    assert server.requests == []


def test_allowing_internal_hosts_by_setting_makes_the_local_judge_work(db: None, settings) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    with running_chat_server(rubric_judge()) as server:
        assert not _form(server.base_url).is_valid()
        settings.OUTBOUND_ALLOW_INTERNAL_HOSTS = True
        form = _form(server.base_url)
        assert form.is_valid(), form.errors
        status, error = _judge(form.save())
    assert status == JobStatus.SUCCEEDED, error
    assert server.requests


def test_the_settings_judge_key_goes_only_to_the_judge_base_url(db: None, settings) -> None:
    settings.JUDGE_API_KEY = "sk-deploy"
    settings.JUDGE_BASE_URL = "https://api.judge.example/v1"
    with running_chat_server(rubric_judge()) as listener:
        # The pentest's row: another URL, no key variable. It is judged, but without the key.
        config = JudgeConfig.objects.create(name="listener", base_url=listener.base_url, model="m")
        status, error = _judge(config)
    assert status == JobStatus.SUCCEEDED, error
    assert listener.requests
    assert {request.headers.get("Authorization") for request in listener.requests} == {None}


def test_the_settings_judge_key_reaches_its_own_host(db: None, settings) -> None:
    settings.JUDGE_API_KEY = "sk-deploy"
    with running_chat_server(rubric_judge()) as home:
        settings.JUDGE_BASE_URL = home.base_url
        status, error = _judge(JudgeConfig.objects.create(name="home", model="m"))
    assert status == JobStatus.SUCCEEDED, error
    assert {request.headers.get("Authorization") for request in home.requests} == {"Bearer sk-deploy"}


def test_a_named_key_bound_to_another_host_is_refused_on_save_and_sends_nothing(
    db: None, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHOSTUDIO_JUDGE_KEY_OPENAI", "sk-openai")
    settings.OUTBOUND_KEY_HOSTS = {"ECHOSTUDIO_JUDGE_KEY_OPENAI": "api.openai.com"}
    with running_chat_server(rubric_judge()) as listener:
        form = _form(listener.base_url, api_key_env="ECHOSTUDIO_JUDGE_KEY_OPENAI")
        assert not form.is_valid()
        assert "goes only to api.openai.com" in form.errors["api_key_env"][0]
        config = JudgeConfig.objects.create(
            name="aimed", base_url=listener.base_url, model="m", api_key_env="ECHOSTUDIO_JUDGE_KEY_OPENAI"
        )
        status, error = _judge(config)
    assert status == JobStatus.FAILED and "goes only to api.openai.com" in error
    assert listener.requests == []
    assert "sk-openai" not in error


@pytest.mark.usefixtures("strict_outbound")
def test_the_draft_llm_at_an_internal_address_is_refused_on_call(settings) -> None:
    with running_chat_server([json_reply({"ok": True})]) as server:
        settings.DRAFT_LLM_BASE_URL = server.base_url
        config = draft_config()
        assert config is not None
        with JudgeClient(config) as client:
            reply = client.complete_json(PROMPT)
    assert not reply.ok and "internal address" in (reply.error or "")
    assert server.requests == []


@pytest.mark.usefixtures("strict_outbound")
def test_a_build_naming_internal_endpoints_is_refused_on_save(db: None) -> None:
    config = {
        "endpoints": [{"base_url": "http://127.0.0.1:9911/v1", "model": "m"}],
        "consistency_method": "endpoint",
        "consistency_endpoint": {"base_url": "http://[::1]:8130/v1", "model": "clf"},
        "tts_backend": "openai",
        "tts_base_url": "http://169.254.169.254/v1",
    }
    build = Build(name="b", config=config)
    with pytest.raises(Exception) as refused:
        build.full_clean()
    problems = " ".join(refused.value.message_dict["config"])  # type: ignore[attr-defined]
    for what in ("endpoints[0]", "consistency_endpoint", "tts_base_url"):
        assert f"{what}: " in problems
    assert problems.count("internal address") == 3


def test_a_build_endpoint_key_must_be_bound_to_its_host(db: None, settings) -> None:
    settings.OUTBOUND_KEY_HOSTS = {"ECHOSTUDIO_JUDGE_KEY_LAB": "gpu-box:8000"}
    config = {
        "endpoints": [
            {"base_url": "http://127.0.0.1:9911/v1", "model": "m", "api_key_env": "ECHOSTUDIO_JUDGE_KEY_LAB"}
        ]
    }
    with pytest.raises(Exception, match="goes only to gpu-box:8000"):
        Build(name="b", config=config).full_clean()


@pytest.mark.usefixtures("strict_outbound")
def test_builder_and_classifier_endpoints_are_refused_on_call() -> None:
    # endpoint_client makes the clients of the LLM stages and of the endpoint classifier.
    with (
        running_chat_server([json_reply({"ok": True})]) as server,
        endpoint_client(Endpoint(base_url=server.base_url, model="m", max_retries=0)) as client,
    ):
        reply = client.complete_json(PROMPT)
    assert not reply.ok and "internal address" in (reply.error or "")
    assert server.requests == []


def test_a_builder_key_never_reaches_another_host(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECHOSTUDIO_JUDGE_KEY_LAB", "sk-lab")
    settings.OUTBOUND_KEY_HOSTS = {"ECHOSTUDIO_JUDGE_KEY_LAB": "gpu-box:8000"}
    with running_chat_server([json_reply({"ok": True})]) as server:
        endpoint = Endpoint(base_url=server.base_url, model="m", api_key_env="ECHOSTUDIO_JUDGE_KEY_LAB")
        with pytest.raises(OutboundRefused, match="goes only to gpu-box:8000"):
            endpoint_client(endpoint)
    assert server.requests == []


def _tts_build(base_url: str) -> BuildConfig:
    return BuildConfig.from_json(
        {
            "endpoints": [{"base_url": "https://llm.example/v1", "model": "m"}],
            "tts_backend": "openai",
            "tts_base_url": base_url,
            "voices": ["nova"],
        }
    )


def test_the_tts_key_goes_only_to_the_tts_base_url(settings) -> None:
    settings.TTS_API_KEY = "sk-tts"
    settings.TTS_BASE_URL = "https://tts.example/v1"
    with running_speech_server() as listener:
        # A build's tts_base_url, editable in Django admin, aimed at a listener: voiced, keyless.
        voice_response("Hello there.", "calm", AudioStepContext.for_build(_tts_build(listener.base_url)))
    assert listener.requests and listener.requests[0].headers.get("Authorization") is None
    with running_speech_server() as home:
        settings.TTS_BASE_URL = home.base_url
        voice_response("Hello there.", "calm", AudioStepContext.for_build(_tts_build(home.base_url)))
    assert home.requests[0].headers.get("Authorization") == "Bearer sk-tts"


@pytest.mark.usefixtures("strict_outbound")
def test_tts_at_an_internal_address_is_refused_on_call(settings) -> None:
    settings.TTS_API_KEY = "sk-tts"
    with running_speech_server() as server:
        settings.TTS_BACKEND = "openai"
        settings.TTS_BASE_URL = server.base_url
        with pytest.raises(TtsError, match="internal address"):
            voice_response("Hi.", "calm", AudioStepContext.for_build(_tts_build(server.base_url)))
        with pytest.raises(TtsError, match="internal address"):
            speak_in_style("Hi.", "calm", configured_tts())  # the deployment's own voicing
    assert server.requests == []
