"""Job, EchoChat job, judge-run and checkpoint pages show results as labelled figures and links,
never a Python dict or raw JSON, and a failed job as one sentence with what to do next."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.judging.models import JudgeConfig, JudgeRun
from evaluation.outputs.models import System
from ml.jobs.launch import INFERENCE_JOB, SFT_JOB
from ml.jobs.models import Checkpoint
from webapp.models import Job, JobStatus

# What a dict or JSON object looks like when it leaks into a page (escaped by the template engine).
LEAKS = ("{&#x27;", "{&quot;", "&#x27;:", "&quot;:")


def _finished(kind: str, status: str, **fields: object) -> Job:
    return Job.objects.create(
        kind=kind,
        queue="gpu" if kind in (SFT_JOB, INFERENCE_JOB) else "default",
        status=status,
        progress=1.0,
        finished_at=timezone.now(),
        message={"failed": "Failed", "succeeded": "Done"}[status],
        **fields,
    )


def _no_dict_in(html: str) -> None:
    leaked = [leak for leak in LEAKS if leak in html]
    assert leaked == [], f"a dict or JSON leaked into the page: {leaked}"


def test_a_failed_job_reads_as_one_sentence_with_what_to_do(client_for: Callable[[str], Client]) -> None:
    job = _finished(
        "diagnostic_sleep",
        JobStatus.FAILED,
        error="RuntimeError: the broker folder is not writable",
        parameters={"steps": 3, "delay_s": 0.1},
    )

    html = client_for("admin").get(reverse("job_detail", args=[job.pk])).content.decode()

    assert (
        '<p class="error" data-testid="job-failure">This job failed: the broker folder is not writable; the log '
        "below has the details; fix the cause, then start the job again.</p>"
    ) in html
    assert "Failed · 100%" not in html and "RuntimeError" not in html
    assert "<dt>Steps</dt><dd>3</dd>" in html
    _no_dict_in(html)


def test_an_inference_job_links_the_system_it_produced(client_for: Callable[[str], Client]) -> None:
    system = System.objects.create(name="EchoChat sft-1")
    job = _finished(
        INFERENCE_JOB,
        JobStatus.SUCCEEDED,
        parameters={"start_from": "tiny", "system_name": system.name, "benchmark_version": "echoeval-v1"},
        result={
            "system": system.pk,
            "system_name": system.name,
            "outputs": 9,
            "well_formed": 8,
            "checkpoint": None,
        },
    )

    html = client_for("admin").get(reverse("ml:job", args=[job.pk])).content.decode()

    system_link = f'<a href="{reverse("evaluation:system_edit", args=[system.pk])}">EchoChat sft-1</a>'
    assert f"<dt>System</dt><dd>{system_link}</dd>" in html
    assert "<dt>Well-formed outputs</dt><dd>8</dd>" in html
    assert "<dt>Started from</dt><dd>the tiny demo model (random weights)</dd>" in html
    _no_dict_in(html)


def test_a_training_job_and_its_checkpoint_read_as_figures(client_for: Callable[[str], Client]) -> None:
    job = _finished(
        SFT_JOB,
        JobStatus.SUCCEEDED,
        parameters={
            "start_from": "tiny",
            "config": {"learning_rate": 0.0001, "lora": {"rank": 4, "alpha": 8}},
        },
    )
    checkpoint = Checkpoint.objects.create(
        name="sft-job1",
        kind=Checkpoint.Kind.SFT,
        uri="/models/sft-job1",
        produced_by=job,
        metadata={
            "arch": "tiny",
            "metrics": {"loss": 0.5},
            "weight_sha256": {"model.safetensors": "ab" * 32},
        },
    )
    job.result = {"checkpoint": checkpoint.pk, "checkpoint_name": checkpoint.name, "metrics": {"loss": 0.5}}
    job.save(update_fields=["result"])
    admin = client_for("admin")

    job_html = admin.get(reverse("ml:job", args=[job.pk])).content.decode()
    checkpoint_html = admin.get(reverse("ml:checkpoint", args=[checkpoint.pk])).content.decode()

    checkpoint_link = f'<a href="{reverse("ml:checkpoint", args=[checkpoint.pk])}">sft-job1</a>'
    assert f"<dt>Checkpoint</dt><dd>{checkpoint_link}</dd>" in job_html
    assert "<dt>Training LoRA rank</dt><dd>4</dd>" in job_html
    assert "<dt>Final loss</dt><dd>0.5</dd>" in checkpoint_html and "ab" * 32 not in checkpoint_html
    _no_dict_in(job_html)
    _no_dict_in(checkpoint_html)


def test_a_judge_run_shows_its_counts_in_words(client_for: Callable[[str], Client]) -> None:
    job = _finished("judge_run", JobStatus.SUCCEEDED, result={"to_judge": 6, "valid": 6, "already_judged": 0})
    run = JudgeRun.objects.create(
        system=System.objects.create(name="Omni-X"),
        benchmark_version="echoeval-v1",
        judge_config=JudgeConfig.objects.create(name="Offline", offline_heuristic=True),
        job=job,
    )

    html = client_for("admin").get(reverse("evaluation:judge_run_detail", args=[run.pk])).content.decode()

    assert "<dt>Stages to judge</dt><dd>6</dd>" in html
    assert "<dt>Already judged by another attempt</dt><dd>0</dd>" in html
    _no_dict_in(html)


@pytest.mark.parametrize("name", ["actor", "reviewer", "annotator", "lead", "evaluator", "norole"])
def test_only_admins_see_job_pages(client_for: Callable[[str], Client], name: str) -> None:
    job = _finished("diagnostic_sleep", JobStatus.FAILED, error="x")

    assert client_for(name).get(reverse("job_detail", args=[job.pk])).status_code in (302, 403)
