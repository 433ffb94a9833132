"""The seeded demo after a day of work in every role, backed up and restored into a fresh studio, on
the suite's database (SQLite, or PostgreSQL when DATABASE_URL names it: CI runs both): every row of
every table, every audio file and the leaderboard are the same, and a truncated copy is refused."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from annotation.labelling.models import Annotation
from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import assign_reviewers, present_reviews, record_playback, submit_verdict
from annotation.recording.takes import record_take
from evaluation.judging.models import JudgeConfig
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from evaluation.studies.creation.items import create_study
from evaluation.studies.forms import StudyForm
from evaluation.studies.models import StudyAssignment
from evaluation.studies.workflows import submit_rating
from tests.evaluation.studies.support import play
from tests.factories import AnnotationFactory, GoldReferenceFactory, ItemFactory, speech_like_wav
from tests.support.listening import listen
from tests.webapp.backup_support import empty_studio, every_media_file, every_row
from tests.webapp.test_seed_demo import _as_sent
from webapp.backup import studio_is_empty
from webapp.jobs import JobStatus, run_job
from webapp.models import Job, User


def _a_day_of_work() -> None:
    """What each role does on the demo, through the workflows the pages call."""
    admin, actor = User.objects.get(username="admin"), User.objects.get(username="actor")
    # Voice actor: a new take of a new item.
    item = ItemFactory.create(actor=actor, external_id="BACKUP-1")
    take = record_take(item, actor, speech_like_wav(), "take.wav")
    for job in Job.objects.filter(status=JobStatus.QUEUED):
        run_job(job.pk)  # the take's analysis, as the worker runs it
    # Reviewers: each hears the whole take and accepts it.
    take.refresh_from_db()
    reviews = list(Review.objects.filter(take=take).select_related("take")) or assign_reviewers(take)
    present_reviews(reviews, now=timezone.now() - timedelta(minutes=20))
    for review in reviews:
        listen(review.reviewer, take.audio_key)
        record_playback(review)
        submit_verdict(review.pk, review.reviewer, Review.Verdict.ACCEPT)
    # Annotator and lead: a submitted annotation and a gold reference.
    annotator, lead = User.objects.get(username="annotator1"), User.objects.get(username="lead")
    # (accepting the take assigned annotators already; the demo's own labels are submitted ones)
    assert Annotation.objects.filter(item=item).exists()
    AnnotationFactory.create(item=ItemFactory.create(external_id="BACKUP-2"), annotator=annotator)
    GoldReferenceFactory.create(item=item, adjudicated_by=lead)
    # Admin: the offline judge scores both demo systems (the leaderboard's figures).
    judge = JudgeConfig.objects.get(offline_heuristic=True)
    for system in System.objects.filter(name__endswith="(demo)"):
        run = start_judge_run(system, "echoeval-v1", judge, started_by=admin)
        assert run.job is not None
        run_job(run.job.pk)
    # Admin starts a listening study; an evaluator rates their first stimulus.
    form = StudyForm(_as_sent(StudyForm(), name="Backup study"))
    assert form.is_valid(), form.errors
    study = create_study(form.to_spec(), created_by=admin)
    assignment = StudyAssignment.objects.filter(study=study).order_by("position").first()
    assert assignment is not None
    play(assignment)
    submit_rating(assignment.pk, {key: 4 for key in study.dimensions})


def _leaderboard() -> tuple[Any, str]:
    client = Client()
    client.force_login(User.objects.get(username="admin"))
    judge = JudgeConfig.objects.get(offline_heuristic=True)
    api = client.get(f"/api/leaderboard/?judge={judge.pk}")
    assert api.status_code == 200
    page = client.get(f"/results/leaderboard/?judge={judge.pk}")
    assert page.status_code == 200
    table = page.content.decode().split('id="leaderboard"', 1)[1].split("</table>", 1)[0]
    return api.json(), table


@pytest.mark.slow
def test_the_demo_after_a_day_of_work_round_trips_row_for_row(
    transactional_db: None, media_root: Path, tmp_path: Path, settings: Any
) -> None:
    call_command("seed_demo", stdout=io.StringIO())
    _a_day_of_work()
    assert Take.objects.filter(item__external_id="BACKUP-1", status=Take.Status.ACCEPTED).exists()
    board = _leaderboard()  # first: signing in to read it writes rows (last login, session)
    rows, media = every_row(), every_media_file()
    assert board[0]["rows"], "the judged demo systems are on the leaderboard"
    assert len(media) > 50 and rows["annotation.item"][0] == Item.objects.count()

    snapshot = tmp_path / "snapshot"
    call_command("backup", str(snapshot), stdout=io.StringIO())
    empty_studio(settings, tmp_path / "fresh-media")
    call_command("restore", str(snapshot), stdout=io.StringIO())

    assert every_row() == rows
    assert every_media_file() == media
    assert _leaderboard() == board

    # A copy cut short (here the media index, as an interrupted transfer leaves it) is refused.
    manifest = json.loads((snapshot / "manifest.json").read_text())
    assert manifest["media"]["files"] == len(media)
    index = snapshot / "media.jsonl"
    index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    empty_studio(settings, tmp_path / "another-fresh-media")
    with pytest.raises(CommandError, match="truncated"):
        call_command("restore", str(snapshot), stdout=io.StringIO())
    assert studio_is_empty()
