"""Response-audio quality: DNSMOS of each reply's audio, measured by a job (never by the page), stored
on the reply and averaged per system on the EchoMind leaderboard; "not computed" without audio."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client

from annotation.audio.speech.quality import dnsmos_scores
from annotation.audio.upload import normalise_upload
from evaluation.echomind import reports
from evaluation.echomind.answers import import_answers
from evaluation.echomind.models import Delivery, Reply
from evaluation.echomind.replies.quality import QUALITY_JOB, replies_to_measure
from evaluation.echomind.scoring import NOT_COMPUTED, REPLY_METRICS, cells
from evaluation.echomind.transfer import import_layout
from tests.evaluation.echomind.fixture import echomind_files
from tests.factories import SystemFactory, speech_like_wav, tiny_wav
from webapp.jobs import run_job, start_job
from webapp.models import Job, JobStatus, User
from webapp.storage import read_media

pytestmark = pytest.mark.django_db
DNSMOS_COLUMN = 7 + [key for key, _ in REPLY_METRICS].index("dnsmos")


def _replies(system_name: str, audio: dict[str, bytes]) -> None:
    """Import a reply to every delivery of case id_1, with the audio given by delivery role."""
    rows, files = [], {}
    for delivery in Delivery.objects.filter(delivery_set__case_id="id_1"):
        row = {"delivery": delivery.audio_name(), "prompt": "none", "response": f"A {delivery.role} reply."}
        if delivery.role in audio:
            row["audio"] = f"{delivery.role}.wav"
            files[f"{delivery.role}.wav"] = audio[delivery.role]
        rows.append(row)
    report = import_answers(
        SystemFactory.create(name=system_name), "\n".join(json.dumps(r) for r in rows).encode(), files
    )
    assert not report.problems, report.problems


@pytest.fixture
def replies(users: dict[str, User], media_root: Path) -> None:
    import_layout(echomind_files(with_audio=False), users["admin"])
    # Spoken: two replies long enough to measure, one too short; silent: no audio at all.
    _replies(
        "Spoken", {"target": speech_like_wav(), "neutral": speech_like_wav(), "alternative": tiny_wav(0.3)}
    )
    _replies("Silent", {})


def _row(system: str) -> list[str]:
    return next(cells(row) for row in reports.board() if row.system == system)


def test_the_job_stores_dnsmos_per_reply_and_the_leaderboard_averages_it(replies: None) -> None:
    # given replies with audio and no DNSMOS yet
    assert _row("Spoken")[DNSMOS_COLUMN] == NOT_COMPUTED

    # when the quality job runs, as a worker runs it
    job = start_job(QUALITY_JOB)
    run_job(job.pk)
    job.refresh_from_db()

    # then each reply long enough holds the P.808 estimate of its own audio
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result == {"measured": 2, "too_short": 1, "unreadable": 0}
    spoken = {
        r.delivery.role: r for r in Reply.objects.filter(system__name="Spoken").select_related("delivery")
    }
    for role in ("target", "neutral"):
        expected = dnsmos_scores(normalise_upload(read_media(spoken[role].audio_key), "reply").samples)
        assert expected is not None and spoken[role].scores["dnsmos"] == expected.p808
        assert 1.0 <= spoken[role].scores["dnsmos"] <= 5.0
    assert "dnsmos" not in spoken["alternative"].scores  # too short: not computed, never zero

    # and the leaderboard shows the system's mean; a system without audio reads "not computed"
    mean = (spoken["target"].scores["dnsmos"] + spoken["neutral"].scores["dnsmos"]) / 2
    assert _row("Spoken")[DNSMOS_COLUMN] == f"{mean:.2f}"
    assert _row("Silent")[DNSMOS_COLUMN] == NOT_COMPUTED

    # and a second run has nothing left to measure (the short reply's length is known from its import)
    assert replies_to_measure() == [] and spoken["alternative"].audio_seconds == pytest.approx(0.3)
    again = start_job(QUALITY_JOB)
    run_job(again.pk)
    again.refresh_from_db()
    assert again.result == {"measured": 0, "too_short": 1, "unreadable": 0}


def test_the_page_queues_the_job_and_measures_nothing_itself(
    replies: None, client_for: Callable[[str], Client]
) -> None:
    admin = client_for("admin")
    assert "Measure reply audio (DNSMOS)" in admin.get("/echomind/leaderboard/").content.decode()

    response = admin.post("/echomind/quality/")

    job = Job.objects.get(kind=QUALITY_JOB)
    assert response.status_code == 302 and response["Location"] == f"/manage/jobs/{job.pk}/"
    assert job.status == JobStatus.QUEUED
    assert not Reply.objects.filter(scores__has_key="dnsmos").exists()


def test_imported_reply_audio_is_stored_clean_and_a_missing_file_refuses_the_import(
    users: dict[str, User], media_root: Path
) -> None:
    import_layout(echomind_files(with_audio=False), users["admin"])
    target = Delivery.objects.get(delivery_set__case_id="id_1", role="target")
    system = SystemFactory.create()
    row = {"delivery": target.audio_name(), "response": "There, there.", "audio": "r.wav"}

    refused = import_answers(system, json.dumps(row).encode(), {})
    assert refused.problems == ["line 1: no audio file r.wav"] and not Reply.objects.exists()

    # The released layout's response name is found without the row naming it.
    del row["audio"]
    import_answers(
        system, json.dumps(row).encode(), {target.audio_name()[:-4] + "_response.wav": tiny_wav(1.0)}
    )
    stored = Reply.objects.get()
    assert stored.audio_key and read_media(stored.audio_key)[:4] == b"RIFF"


@pytest.mark.parametrize("name", ["actor", "reviewer", "annotator", "lead", "evaluator", "norole"])
def test_only_admins_start_the_quality_job(
    replies: None, client_for: Callable[[str], Client], name: str
) -> None:
    assert client_for(name).post("/echomind/quality/").status_code == 403
    assert not Job.objects.filter(kind=QUALITY_JOB).exists()
