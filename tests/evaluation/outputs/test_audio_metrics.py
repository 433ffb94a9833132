"""Objective response-audio metrics: measured by a job started from the leaderboard, stored per
output, shown per system beside the judges' Audio score."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from django.urls import reverse

from annotation.audio.synthesis import synthesize, to_wav_bytes
from evaluation.judging.models import JudgeConfig
from evaluation.outputs.audio_metrics import JOB_KIND, METRICS, outputs_to_measure
from evaluation.outputs.models import ModelOutput, OutputAudioMetrics, System
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory, stored_wav
from webapp.api.tokens import create_token
from webapp.client.__main__ import run
from webapp.jobs import run_job
from webapp.models import Job, JobStatus

pytestmark = pytest.mark.django_db
REPLY = "I am so sorry to hear that, it sounds like a really hard day for you."


def _spoken(snr_db: float | None = None) -> bytes:
    """The reply read by eSpeak NG, with white noise `snr_db` below the speech when given."""
    speech = synthesize(REPLY)
    samples = speech.samples.astype(np.float64) / 32768
    if snr_db is not None:
        power = float(np.mean(np.square(samples[np.abs(samples) > 1e-3])))
        noise = np.random.default_rng(1).normal(0.0, np.sqrt(power / 10 ** (snr_db / 10)), len(samples))
        samples = np.clip(samples + noise, -1.0, 1.0)
    return to_wav_bytes(np.round(samples * 32767).astype(np.int16), speech.sample_rate)


def _measure(
    client,
    django_capture_on_commit_callbacks,
    version: str = "echoeval-v1",
    status: str = JobStatus.SUCCEEDED,
) -> dict[str, Any]:
    """Start the measurement as an admin does and run its job here; return the job's result."""
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(reverse("evaluation:measure_audio"), {"version": version})
    assert response.status_code == 302
    job = Job.objects.filter(kind=JOB_KIND).latest("created_at")
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == status and job.result is not None, job.error
    return dict(job.result)


def _measured(row: OutputAudioMetrics) -> dict[str, float]:
    """Return a row's figures, every one of which the test expects to be measured."""
    figures = {
        name: getattr(row, name)
        for name in ("p808_mos", "ovrl_mos", "loudness_lufs", "true_peak_dbtp", "phones_per_second")
    }
    assert None not in figures.values(), figures
    return figures


def test_the_job_measures_each_reply_once_and_again_after_its_audio_changes(
    media_root, client_for, django_capture_on_commit_callbacks
) -> None:
    # given a clean and a noisy spoken reply, and a text-only one
    clean = ModelOutputFactory.create(response_text=REPLY, response_audio_key=stored_wav(_spoken(), "output"))
    noisy = ModelOutputFactory.create(
        response_text=REPLY, response_audio_key=stored_wav(_spoken(5.0), "output")
    )
    silent = ModelOutputFactory.create(system=System.objects.create(name="Text", text_only=True))
    admin = client_for("admin")

    # when an admin starts the measurement from the leaderboard and the job runs
    result = _measure(admin, django_capture_on_commit_callbacks)

    # then both spoken replies are measured, the noisy one scored lower, and the text-only one not at all
    assert result == {
        "benchmark_version": "echoeval-v1",
        "measured": 2,
        "problems": 0,
        "rows": {
            "total": 2,
            "failed": 0,
            "noun": "audio files",
            "status": "succeeded",
            "share": 0.0,
            "percent": "0%",
        },
    }
    clean_figures, noisy_figures = _measured(clean.audio_metrics), _measured(noisy.audio_metrics)
    assert clean_figures["p808_mos"] > noisy_figures["p808_mos"] + 0.5
    assert clean_figures["ovrl_mos"] > noisy_figures["ovrl_mos"]
    assert -35 < clean_figures["loudness_lufs"] < -10 and clean_figures["true_peak_dbtp"] < 0
    assert 8 < clean_figures["phones_per_second"] < 20
    assert not OutputAudioMetrics.objects.filter(output=silent).exists()
    # and a second run has nothing left to do, until a reply's audio is replaced
    assert _measure(admin, django_capture_on_commit_callbacks)["measured"] == 0
    ModelOutput.objects.filter(pk=noisy.pk).update(response_audio_key=stored_wav(_spoken(), "output"))
    assert list(outputs_to_measure("echoeval-v1")) == [ModelOutput.objects.get(pk=noisy.pk)]
    assert _measure(admin, django_capture_on_commit_callbacks)["measured"] == 1
    remeasured = _measured(OutputAudioMetrics.objects.get(output=noisy))
    assert remeasured["p808_mos"] > noisy_figures["p808_mos"] + 0.5  # the clean audio now


def test_unreadable_audio_is_recorded_as_a_problem_not_retried(
    media_root, client_for, django_capture_on_commit_callbacks
) -> None:
    broken = ModelOutputFactory.create(response_audio_key=stored_wav(b"not audio at all", "output"))
    # the job's only audio file could not be measured: nothing usable, so the job failed (its result kept)
    result = _measure(client_for("admin"), django_capture_on_commit_callbacks, status=JobStatus.FAILED)
    assert result["problems"] == 1
    assert OutputAudioMetrics.objects.get(output=broken).problem
    assert not outputs_to_measure("echoeval-v1").exists()


def _judged_and_measured(
    judge: JudgeConfig, name: str, audio_scores: tuple[float, ...], p808s: tuple[float, ...]
) -> list[ModelOutput]:
    """A system whose replies the judge scored `audio_scores` for audio and that were measured
    (P.808 `p808s`, -20 LUFS, nothing else)."""
    system = System.objects.create(name=name)
    outputs = [ModelOutputFactory.create(system=system) for _ in audio_scores]
    for output, score, p808 in zip(outputs, audio_scores, p808s, strict=True):
        JudgementFactory.create(output=output, stage="response_audio", judge_config=judge, score=score)
        OutputAudioMetrics.objects.create(
            output=output, audio_key=output.response_audio_key, p808_mos=p808, loudness_lufs=-20.0
        )
    return outputs


def _page_rows(html: str) -> dict[str, list[str]]:
    """Return the leaderboard page's objective audio table: system -> its cells as shown."""
    table = re.search(r'data-testid="objective-audio-table">(.*?)</table>', html, re.S)
    assert table is not None
    assert "Judges' Audio (1-5)" in table.group(1) and "DNSMOS P.808" in table.group(1)
    # each measure's interval and n are read by tests/evaluation/outputs/test_reply_measures.py
    means = re.sub(r'<span class="coverage" data-testid="(interval|metric-n)">.*?</span>', "", table.group(1))
    # the judges' Audio carries its n/N under it, read here as "value n/N"
    shown = re.sub(r'<span class="coverage">(.*?)</span>', r" \1", means)
    return {
        system: re.findall(r'<td class="num"[^>]*>(.*?)</td>', row)
        for system, row in re.findall(r'<tr data-measured-system="([^"]+)">(.*?)</tr>', shown, re.S)
    }


def test_the_leaderboard_shows_the_measures_beside_the_judges_audio(media_root, client_for) -> None:
    # given a system whose two replies the judge gave 4 and 2 for audio, and that were measured
    judge = JudgeConfigFactory.create(name="gpt-judge")
    outputs = _judged_and_measured(judge, "EchoChat", (4.0, 2.0), (3.5, 2.5))
    # a measurement of audio since replaced counts for nothing
    ModelOutput.objects.filter(pk=outputs[1].pk).update(response_audio_key="replaced.wav")

    html = client_for("admin").get(reverse("evaluation:leaderboard"), {"judge": judge.pk}).content.decode()

    # judges' Audio 3.00 (mean of 4 and 2), P.808 3.50 and -20.00 LUFS from the one current row
    assert _page_rows(html) == {"EchoChat": ["3.00 2/2", "3.50", "-", "-20.00", "-", "-", "-", "1 of 2"]}
    assert "integrated loudness, ITU-R BS.1770" in html


@pytest.mark.django_db(transaction=True)
def test_the_api_and_the_client_carry_the_pages_objective_figures(
    media_root, client_for, live_server, users, capsys
) -> None:
    # given two measured systems, one with a measurement of audio since replaced
    judge = JudgeConfigFactory.create(name="gpt-judge")
    _judged_and_measured(judge, "EchoChat", (4.0, 2.0, 5.0), (3.456, 2.5, 1.0))
    replaced = _judged_and_measured(judge, "Parrot", (3.0, 3.0), (2.25, 4.0))[1]
    ModelOutput.objects.filter(pk=replaced.pk).update(response_audio_key="replaced.wav")
    admin = client_for("admin")

    # when an admin reads the page and the API, and runs the client
    page = _page_rows(admin.get(reverse("evaluation:leaderboard"), {"judge": judge.pk}).content.decode())
    objective = admin.get("/api/leaderboard/", {"judge": judge.pk}).json()["objective_audio"]
    token = create_token(users["admin"], "objective").secret
    assert (
        run(["--url", live_server.url, "--token", token, "--quiet", "leaderboard", "--judge", "gpt-judge"])
        == 0
    )
    printed = capsys.readouterr().out

    # then the API's rows, rounded as the page rounds them, are the page's, with each metric's scale
    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    api = {
        row["system"]: [
            f"{shown(row['judges_audio'])} {row['judges_audio_n_valid']}/{row['judges_audio_n_expected']}",
            *(shown(row["means"][metric.key]) for metric in METRICS),
            f"{row['measured']} of {row['with_audio']}",
        ]
        for row in objective["rows"]
    }
    assert (
        api
        == page
        == {
            # each system answered its own items: 3 and 2 of the 5 expected of both
            "EchoChat": ["3.67 3/5", "2.32", "-", "-20.00", "-", "-", "-", "3 of 3"],
            "Parrot": ["3.00 2/5", "2.25", "-", "-20.00", "-", "-", "-", "1 of 2"],
        }
    )
    assert objective["metrics"] == [
        {
            "key": metric.key,
            "label": metric.label,
            "scale": metric.scale,
            # the bounds a client clips its own intervals to, as the page does
            "lowest": metric.lowest,
            "highest": metric.highest,
        }
        for metric in METRICS
    ]
    # and the client prints the same figures under Table 2, each metric's scale with them
    objective_lines = printed.split("\n\n", 1)[1].splitlines()
    for system, cells in page.items():
        [line] = [line for line in objective_lines if line.startswith(system + " ")]
        assert re.split(r"\s{2,}", line) == [system, *cells]
    for metric in METRICS:
        assert f"{metric.label}: {metric.scale}" in objective_lines


def test_only_admins_start_a_measurement(client_for) -> None:
    ModelOutputFactory.create()
    for role in ("evaluator", "lead"):
        response = client_for(role).post(reverse("evaluation:measure_audio"), {"version": "echoeval-v1"})
        assert response.status_code in (302, 403)
    assert not Job.objects.filter(kind=JOB_KIND).exists()
    assert (
        client_for("admin").post(reverse("evaluation:measure_audio"), {"version": "nope"}).status_code == 404
    )
