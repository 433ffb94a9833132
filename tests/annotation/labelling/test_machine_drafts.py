"""Machine drafts of the ToM fields from a real local OpenAI-compatible server, and their failures."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.labelling import workflows
from annotation.labelling.drafts import JOB_KIND, DraftsDisabled, start_draft_job
from annotation.labelling.models import MachineDraft
from tests.annotation.labelling.support import form_data, perception
from tests.support.fake_chat_server import chat_reply, json_reply, running_chat_server
from webapp.jobs import run_job
from webapp.models import Job, JobStatus

GOOD_DRAFT = {
    "context": "Sarcasm about Mondays",
    "latent_need": "Wants the frustration seen",
    "core_demand": "Acknowledge, do not fix",
    "recommended_strategies": ["Emotional validation", "reflection-of-feelings"],
    "not_recommended_strategies": ["Information"],
    "constraints": ["premature problem-solving"],
}


@pytest.fixture
def endpoint(settings):
    def configure(base_url: str, timeout_s: float = 5.0) -> None:
        settings.DRAFT_LLM_BASE_URL = base_url
        settings.DRAFT_LLM_MODEL = "draft-model"
        settings.DRAFT_LLM_API_KEY = "sk-test"
        settings.DRAFT_LLM_TIMEOUT_SECONDS = timeout_s
        settings.DRAFT_LLM_MAX_RETRIES = 0

    return configure


def run_drafts(item, django_capture_on_commit_callbacks) -> Job:
    with django_capture_on_commit_callbacks(execute=False):
        job = start_draft_job(started_by=None, item_ids=[item.pk])
    run_job(job.pk)
    job.refresh_from_db()
    return job


def test_a_draft_is_stored_apart_from_human_work(item, endpoint, django_capture_on_commit_callbacks) -> None:
    with running_chat_server([json_reply(GOOD_DRAFT)]) as server:
        endpoint(server.base_url)
        job = run_drafts(item, django_capture_on_commit_callbacks)
    assert job.kind == JOB_KIND and job.status == JobStatus.SUCCEEDED
    assert job.result == {"drafted": 1, "failed": 0}
    draft = MachineDraft.objects.get(item=item)
    assert draft.ok and draft.model_name == "draft-model" and draft.prompt_version == "tom-draft-v1"
    assert draft.tom["recommended_strategies"] == ["emotional-validation", "reflection-of-feelings"]
    assert draft.tom["not_recommended_strategies"] == ["information"]
    request = server.chat_requests[0]
    assert request.headers["Authorization"] == "Bearer sk-test"
    body = request.json
    assert isinstance(body, dict)
    assert body["model"] == "draft-model"
    prompt = json.dumps(body["messages"])
    assert item.text in prompt and "emotional-validation" in prompt
    assert not item.annotations.exists()


def test_garbage_answers_are_stored_as_clear_errors(
    item, endpoint, django_capture_on_commit_callbacks
) -> None:
    with running_chat_server([chat_reply("Sure! Here are my thoughts on Mondays...")]) as server:
        endpoint(server.base_url)
        job = run_drafts(item, django_capture_on_commit_callbacks)
    draft = MachineDraft.objects.get(item=item)
    assert draft.error == "The draft model gave no usable answer: answer is not a JSON object"
    assert draft.raw_text == "Sure! Here are my thoughts on Mondays..."
    assert job.status == JobStatus.FAILED
    assert (
        "No item could be drafted (1 failed). First error: The draft model gave no usable answer" in job.error
    )


def test_answers_that_miss_fields_or_invent_strategies_are_errors(
    item, endpoint, django_capture_on_commit_callbacks
) -> None:
    broken = {**GOOD_DRAFT, "latent_need": "", "recommended_strategies": ["hugging"]}
    with running_chat_server([json_reply(broken)]) as server:
        endpoint(server.base_url)
        run_drafts(item, django_capture_on_commit_callbacks)
    error = MachineDraft.objects.get(item=item).error
    assert error.startswith("The draft model's answer does not fit the ToM fields:")
    assert "missing latent_need" in error and "unknown recommended strategies: hugging" in error


def test_a_timeout_is_an_error_not_a_hang(item, endpoint, django_capture_on_commit_callbacks) -> None:
    with running_chat_server([json_reply(GOOD_DRAFT, delay_s=3.0)]) as server:
        endpoint(server.base_url, timeout_s=0.3)
        job = run_drafts(item, django_capture_on_commit_callbacks)
    assert MachineDraft.objects.get(item=item).error.startswith(
        "The draft model gave no usable answer: timeout after 0.3s"
    )
    assert job.status == JobStatus.FAILED


def test_without_an_endpoint_there_are_no_drafts_and_the_page_still_works(
    settings, client_as, annotations
) -> None:
    settings.DRAFT_LLM_BASE_URL = ""
    with pytest.raises(DraftsDisabled):
        start_draft_job(started_by=None)
    page = client_as(annotations[0].annotator).get(reverse("annotation:workbench", args=[annotations[0].pk]))
    assert page.status_code == 200
    assert b'data-testid="draft-note"' not in page.content
    # The annotator is told why the ToM fields start empty.
    assert b"drafting is off on this server (no draft endpoint is configured)" in page.content


def test_the_workbench_starts_from_the_draft_and_records_what_changed(client_as, annotations) -> None:
    ana_annotation = annotations[0]
    drafted = {
        **GOOD_DRAFT,
        "recommended_strategies": ["emotional-validation"],
        "not_recommended_strategies": [],
    }
    MachineDraft.objects.create(item=ana_annotation.item, model_name="m", prompt_version="v", tom=drafted)
    client = client_as(ana_annotation.annotator)
    page = client.get(reverse("annotation:workbench", args=[ana_annotation.pk])).content.decode()
    assert "Started from a machine draft" in page
    assert "Wants the frustration seen</textarea>" in page
    ana_annotation.refresh_from_db()
    final_tom = {**drafted, "latent_need": "To feel less alone with it"}
    response = client.post(
        reverse("annotation:submit_annotation", args=[ana_annotation.pk]),
        form_data(perception(pitch="normal"), final_tom, ana_annotation.version),
    )
    assert response.status_code == 302
    ana_annotation.refresh_from_db()
    assert ana_annotation.changed_from_draft == ["perception.pitch", "tom.latent_need"]
    assert ana_annotation.machine_draft is not None


def test_failed_drafts_are_never_offered(annotations) -> None:
    MachineDraft.objects.create(item=annotations[0].item, model_name="m", prompt_version="v", error="timeout")
    opened = workflows.open_annotation(annotations[0])
    assert opened.machine_draft is None
    assert opened.tom["context"] == ""
