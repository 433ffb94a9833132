"""Journey: build -> spot-check keep / fix / drop -> a new export version -> an SFT job on it.

What annotators decided is what the job trains on: the fixed record with its fix, the dropped one
not at all, and the job names the version it read; the version written before stays as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ml.builder.export_versions import BuildExport, start_export
from ml.builder.models import BuildSample, SpotCheck
from ml.builder.pages.queue import Decision, decide, draw_spot_checks
from ml.core.training_records import MANIFEST_FILE, RECORDS_FILE, TrainingRecord
from ml.jobs.builds.sources import build_records
from ml.jobs.launch import SFT_JOB, start_ml_job
from ml.jobs.models import DatasetSnapshot
from tests.ml.builder.pages.spotcheck_builds import finished_build, taken
from tests.ml.builder.support import run_queued_jobs
from tests.ml.jobs.support import finished, tiny_sft_parameters
from webapp.models import JobStatus
from webapp.roles import Role

pytestmark = pytest.mark.slow


def _records(export: BuildExport) -> dict[str, TrainingRecord]:
    lines = (Path(export.path) / RECORDS_FILE).read_text(encoding="utf-8").splitlines()
    return {record.item_id: record for record in map(TrainingRecord.from_json, lines)}


def test_spot_check_decisions_reach_the_sft_job_through_a_new_export_version(
    ml_storage: Path, settings, tmp_path: Path, make_user
) -> None:
    settings.VAR_DIR = tmp_path / "var"
    admin, annotator = make_user(Role.ADMIN), make_user(Role.ANNOTATOR)
    # given a finished build of six voiced samples, exported once as the pipeline does
    build = finished_build(single=6, audio=True)
    first = start_export(build, "the pipeline finished")
    run_queued_jobs()
    first.refresh_from_db()
    assert first.finished_at is not None and len(_records(first)) == 6

    # when three samples are drawn and an annotator keeps one, fixes one and drops one
    assert draw_spot_checks(build, count=3) == 3
    kept = decide(taken(annotator, build), annotator, Decision("keep")).sample
    fixed = decide(
        taken(annotator, build),
        annotator,
        Decision(
            "fix", ("perception_wrong",), perception={"emotion": "angry"}, response="That must feel unfair."
        ),
    ).sample
    dropped = decide(taken(annotator, build), annotator, Decision("drop", ("audio_wrong_emotion",))).sample

    # then the decision that completed the round wrote a new version with all three decisions
    run_queued_jobs()
    second = BuildExport.objects.get(build=build, version=2)
    assert second.finished_at is not None and second.reason == "a spot-check round was complete"
    assert second.path.endswith(f"build-{build.pk}/v2")
    assert second.decisions == {"keep": 1, "fix": 1, "drop": 1}
    manifest = json.loads((Path(second.path) / MANIFEST_FILE).read_text())
    assert manifest["version"] == 2 and manifest["counts"]["fixed_by_annotators"] == 1
    assert sorted(manifest["spot_check_decisions"]["checks"]) == sorted(
        SpotCheck.objects.filter(build=build).values_list("pk", flat=True)
    )
    records = _records(second)
    assert dropped.external_id not in records and len(records) == 5
    assert records[fixed.external_id].emotion == "angry"
    assert records[fixed.external_id].response == "That must feel unfair."
    assert records[kept.external_id].response == BuildSample.objects.get(pk=kept.pk).response
    provenance = [
        json.loads(line) for line in (Path(second.path) / "provenance.jsonl").read_text().splitlines()
    ]
    assert [line["item_id"] for line in provenance if line["fixed_by_annotator"]] == [fixed.external_id]
    # and the first version is untouched: a job started on it keeps its data
    assert dropped.external_id in _records(first) and _records(first)[fixed.external_id].emotion == "sad"

    # when an SFT job is started on the build
    job = finished(start_ml_job(SFT_JOB, started_by=admin, parameters=tiny_sft_parameters(), build=build))

    # then it names the version it read and trained on exactly that version's records
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.parameters["build_export_version"] == 2
    snapshot = DatasetSnapshot.objects.get(job=job)
    assert snapshot.build_export == second and "v2" in str(snapshot)
    read = {record.record.item_id: record.record for record in build_records(snapshot)}
    assert set(read) == set(records) and dropped.external_id not in read
    assert read[fixed.external_id].emotion == "angry"
    assert read[fixed.external_id].response == "That must feel unfair."
    assert f"SFT on 5 examples of snapshot #{snapshot.pk}" in job.log
