"""An actor withdraws: the next export, snapshot, study and leaderboard leave their takes out, and the
lineage report names the earlier snapshot, checkpoint, export, study and judge run that used them."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import reverse

from annotation.gold.transfer import jobs as transfer_jobs
from annotation.recording.consent.models import ConsentRecord, TakeUse
from annotation.recording.models import Item, Take
from evaluation.judging.models import JudgeRun
from evaluation.results.reports import leaderboard
from evaluation.studies.creation.items import StudySpec, create_study
from evaluation.studies.models import Study
from ml.jobs.launch import SFT_JOB, start_ml_job
from ml.jobs.models import Checkpoint, DatasetSnapshot
from tests.evaluation.studies.support import REPLY_SPEECH, spoken
from tests.factories import (
    JudgeConfigFactory,
    JudgementFactory,
    ModelOutputFactory,
    SystemFactory,
    stored_wav,
)
from tests.ml.jobs.support import TrainingItemFactory, tiny_sft_parameters
from webapp.jobs import run_job
from webapp.models import AuditEntry, Job, User
from webapp.roles import Role

VERSION = "echoeval-v1"


@pytest.fixture
def studio(db: None, media_root: object, make_user: Callable[..., User]) -> dict[str, object]:
    """Two actors' items with gold, two systems' spoken outputs on all of them, judged once."""
    leaving, staying = make_user(Role.VOICE_ACTOR, "leaving"), make_user(Role.VOICE_ACTOR, "staying")
    items = [
        TrainingItemFactory.create(external_id=f"TR-{actor.username}-{n}", recording__actor=actor)
        for actor in (leaving, staying)
        for n in range(3)
    ]
    judge = JudgeConfigFactory.create()
    systems = [SystemFactory.create(name=f"System{letter}") for letter in "AB"]
    runs = {
        system.pk: JudgeRun.objects.create(system=system, benchmark_version=VERSION, judge_config=judge)
        for system in systems
    }
    reply = spoken(REPLY_SPEECH)
    for system in systems:
        for item in items:
            output = ModelOutputFactory.create(
                system=system, item=item, response_audio_key=stored_wav(reply, "output")
            )
            JudgementFactory.create(output=output, judge_config=judge, score=0.8, run=runs[system.pk])
    return {"leaving": leaving, "staying": staying, "items": items, "judge": judge, "systems": systems}


def _study(systems: list[object], admin: User, evaluator: User, per_system: int) -> Study:
    return create_study(
        StudySpec(
            name=f"Study of {per_system}",
            instructions="Listen, then rate.",
            systems=systems,  # type: ignore[arg-type]
            evaluators=[evaluator],
            items_per_system=per_system,
            ratings_per_output=1,
            training_count=0,
            trap_count=0,
            seed=3,
        ),
        created_by=admin,
    )


def _export(admin: User, django_capture_on_commit_callbacks: Any) -> tuple[Job, set[str]]:
    with django_capture_on_commit_callbacks(execute=False):
        job = transfer_jobs.start_export(started_by=admin)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.result is not None, job.error
    with default_storage.open(job.result["key"], "rb") as handle:
        archive = zipfile.ZipFile(io.BytesIO(handle.read()))
    rows = [json.loads(line) for line in archive.read("gold.jsonl").decode().splitlines()]
    return job, {row["id"] for row in rows}


def _expected_n(judge: object) -> int:
    table = leaderboard(VERSION, judge).table  # type: ignore[arg-type]
    return sum(row.cells["perception_avg"].n_valid for row in table.rows)


def test_a_withdrawn_voice_leaves_every_new_use_and_its_earlier_uses_are_reported(
    studio: dict[str, object],
    users: dict[str, User],
    client_for: Callable[[str], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    leaving, admin, evaluator = studio["leaving"], users["admin"], users["evaluator"]
    assert isinstance(leaving, User)
    mine = {f"TR-leaving-{n}" for n in range(3)}
    theirs = {f"TR-staying-{n}" for n in range(3)}
    systems = studio["systems"]
    assert isinstance(systems, list)

    # Before: everything uses both actors' takes, and says so in the manifest.
    job = start_ml_job(SFT_JOB, started_by=admin, parameters=tiny_sft_parameters(), splits=["train"])
    earlier_snapshot = DatasetSnapshot.objects.get(job=job)
    assert {entry["external_id"] for entry in earlier_snapshot.entries} == mine | theirs
    checkpoint = Checkpoint.objects.create(
        name="sft-before",
        kind=Checkpoint.Kind.SFT,
        uri="/models/sft-before",
        produced_by=job,
        dataset_snapshot=earlier_snapshot,
    )
    rl = Checkpoint.objects.create(
        name="rl-after-sft", kind=Checkpoint.Kind.RL, uri="/m/rl", parent=checkpoint
    )
    earlier_export, exported = _export(admin, django_capture_on_commit_callbacks)
    assert exported == mine | theirs
    earlier_study = _study(systems, admin, evaluator, per_system=6)
    assert TakeUse.objects.filter(kind=TakeUse.STUDY, used_by=earlier_study.pk).count() == 6
    assert _expected_n(studio["judge"]) == 2 * 6

    # The actor withdraws on their own consent page.
    response = client_for_user(leaving).post(reverse("annotation:my_consent"), {"action": "withdraw"})
    assert response.status_code == 302
    assert ConsentRecord.objects.in_force_for(leaving.pk) is None
    entry = AuditEntry.objects.get(action="consent.withdrawn")
    assert entry.actor_id == leaving.pk and entry.before is not None and entry.after is not None
    assert entry.before["scopes"] and entry.after["withdrawn_at"]
    leaving_takes = Take.objects.filter(actor=leaving)
    assert not Take.objects.consented_for("model_training").filter(pk__in=leaving_takes).exists()

    # After: the next snapshot, export, study and leaderboard leave their takes out.
    later = start_ml_job(SFT_JOB, started_by=admin, parameters=tiny_sft_parameters(), splits=["train"])
    later_snapshot = DatasetSnapshot.objects.get(job=later)
    assert {entry["external_id"] for entry in later_snapshot.entries} == theirs
    assert later_snapshot.excluded == {"a recording its speaker does not allow for this use": 3}
    _, exported = _export(admin, django_capture_on_commit_callbacks)
    assert exported == theirs
    later_study = _study(systems, admin, evaluator, per_system=3)
    played = set(
        Item.objects.filter(pk__in=later_study.stimuli.values("item_id")).values_list(
            "external_id", flat=True
        )
    )
    assert played == theirs
    assert _expected_n(studio["judge"]) == 2 * 3
    # The earlier ones keep what they used: lineage, not rewriting.
    assert {
        entry["external_id"] for entry in DatasetSnapshot.objects.get(pk=earlier_snapshot.pk).entries
    } == mine | theirs

    # The lineage report names every earlier use, and none of the later ones.
    admin_client = client_for("admin")
    page = admin_client.get(reverse("ml:person_lineage", args=[leaving.pk])).content.decode()
    assert "withdrawn" in page
    assert f"snapshot #{earlier_snapshot.pk}" in page and f"snapshot #{later_snapshot.pk}" not in page
    assert "sft-before" in page and "rl-after-sft" in page
    assert f"export #{earlier_export.pk}" in page
    assert earlier_study.name in page and later_study.name not in page
    report = json.loads(
        admin_client.get(reverse("ml:person_lineage", args=[leaving.pk]), {"format": "json"}).content
    )
    assert [row["snapshot"] for row in report["snapshots"]] == [earlier_snapshot.pk]
    assert [row["checkpoint"] for row in report["checkpoints"]] == [checkpoint.pk, rl.pk]
    assert [row["job"] for row in report["gold_exports"]] == [earlier_export.pk]
    assert [row["study"] for row in report["studies"]] == [earlier_study.pk]
    assert len(report["judge_runs"]) == 2
    assert sorted(report["takes"]) == sorted(str(take.public_id) for take in leaving_takes)

    # The checkpoint's own page names its data and the takes and annotators behind it.
    checkpoint_page = admin_client.get(reverse("ml:checkpoint", args=[rl.pk])).content.decode()
    assert f"snapshot #{earlier_snapshot.pk}" in checkpoint_page
    assert str(leaving_takes.first().public_id) in checkpoint_page  # type: ignore[union-attr]


def client_for_user(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_exports_by_the_api_and_the_command_are_in_the_lineage_report_too(
    studio: dict[str, object], users: dict[str, User], client_for: Callable[[str], Client], tmp_path: Any
) -> None:
    """An export made outside the gold page's job (the API's JSONL stream and parquet file,
    `manage.py export_gold`) is recorded as a finished export with its takes, so a withdrawal's
    report names it; one made after the withdrawal is not in it."""
    from django.core.management import call_command

    leaving = studio["leaving"]
    assert isinstance(leaving, User)
    admin = client_for("admin")
    streamed = b"".join(admin.get(reverse("annotation:api_gold_export")).streaming_content)  # type: ignore[attr-defined]
    assert len(streamed.splitlines()) == 6
    assert (
        admin.get(reverse("annotation:api_gold_export"), {"as": "parquet", "split": "train"}).status_code
        == 200
    )
    call_command("export_gold", str(tmp_path / "out"), "--format", "jsonl", stdout=io.StringIO())
    direct = list(Job.objects.filter(kind=transfer_jobs.EXPORT_KIND).order_by("pk"))
    assert [job.parameters["via"] for job in direct] == [
        "api jsonl",
        "api parquet",
        "manage.py export_gold --format jsonl",
    ]
    assert all(
        TakeUse.objects.filter(kind=TakeUse.GOLD_EXPORT, used_by=job.pk).count() == 6 for job in direct
    )

    client_for_user(leaving).post(reverse("annotation:my_consent"), {"action": "withdraw"})
    b"".join(admin.get(reverse("annotation:api_gold_export")).streaming_content)  # type: ignore[attr-defined]
    report = json.loads(
        admin.get(reverse("ml:person_lineage", args=[leaving.pk]), {"format": "json"}).content
    )
    assert [row["job"] for row in report["gold_exports"]] == [job.pk for job in direct]
