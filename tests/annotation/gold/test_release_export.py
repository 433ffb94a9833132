"""An export for publication: only takes whose speaker allowed public release, a datasheet filled
from the studio's records, and a manifest of the takes it holds (what lineage reads)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.urls import reverse

from annotation.gold.adjudication import adjudicate_item
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.recording.consent.models import (
    PUBLIC_RELEASE,
    RESEARCH_EVALUATION,
    ConsentRecord,
    ConsentText,
    TakeUse,
)
from annotation.recording.consent.workflows import give_consent
from tests.annotation.labelling.support import LabellingItemFactory, assign, perception, submitted, tom
from tests.factories import UserFactory
from webapp.jobs import run_job
from webapp.models import Job
from webapp.roles import Role


def _gold_item(external_id: str, actor, lead, annotators) -> None:
    item = LabellingItemFactory.create(
        external_id=external_id,
        recording__actor=actor,
        recording__consent=ConsentRecord.objects.in_force_for(actor.pk),
    )
    for annotation in assign(item, *annotators):
        submitted(annotation)
    adjudicate_item(item.pk, lead=lead, perception=perception(), tom=tom(), expected_gold_version=0)


@pytest.fixture
def studio(users, trio) -> None:
    public = UserFactory.create(username="public", role=Role.VOICE_ACTOR, role__consent=False)
    private = UserFactory.create(username="private", role=Role.VOICE_ACTOR, role__consent=False)
    version = ConsentText.current().version
    give_consent(public, [RESEARCH_EVALUATION, PUBLIC_RELEASE], version)
    give_consent(private, [RESEARCH_EVALUATION], version)
    _gold_item("EE-PUB", public, users["lead"], trio)
    _gold_item("EE-PRIV", private, users["lead"], trio)


def _archive(job: Job) -> zipfile.ZipFile:
    job.refresh_from_db()
    assert job.result is not None, job.error
    with default_storage.open(job.result["key"], "rb") as handle:
        return zipfile.ZipFile(io.BytesIO(handle.read()))


def test_a_release_holds_only_public_takes_and_a_datasheet(
    studio, client_for, django_capture_on_commit_callbacks
) -> None:
    lead = client_for("lead")
    with django_capture_on_commit_callbacks(execute=False):
        response = lead.post(
            reverse("annotation:start_gold_export"),
            {"release": "1", "licence": "CC BY 4.0", "motivation": "A test release."},
        )
    assert response.status_code == 302
    job = Job.objects.filter(kind=transfer_jobs.EXPORT_KIND).latest("created_at")
    run_job(job.pk)
    archive = _archive(job)
    rows = [json.loads(line) for line in archive.read("gold.jsonl").decode().splitlines()]
    assert [row["id"] for row in rows] == ["EE-PUB"]
    sheet = archive.read("DATASHEET.md").decode()
    assert "## Motivation\n\nA test release." in sheet
    assert "## Licence\n\nCC BY 4.0" in sheet
    assert "- Items: 1, 1 with a recording" in sheet
    assert "by 1 voice actor(s)" in sheet and "3 annotator(s) labelled" in sheet
    assert "Consent text version(s): v1" in sheet
    assert "- Public release of my recordings: 1 of 1 takes" in sheet
    assert "## Agreement" in sheet and "alpha" in sheet
    take_id = TakeUse.objects.get(kind=TakeUse.GOLD_EXPORT, used_by=job.pk).take_id
    assert take_id == ConsentRecord.objects.get(person__username="public").takes.get().pk


def test_an_ordinary_export_holds_every_consented_take_and_no_datasheet(
    studio, users, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        job = transfer_jobs.start_export(started_by=users["lead"])
    run_job(job.pk)
    archive = _archive(job)
    rows = [json.loads(line) for line in archive.read("gold.jsonl").decode().splitlines()]
    assert sorted(row["id"] for row in rows) == ["EE-PRIV", "EE-PUB"]
    assert "DATASHEET.md" not in archive.namelist()
    assert TakeUse.objects.filter(kind=TakeUse.GOLD_EXPORT, used_by=job.pk).count() == 2
