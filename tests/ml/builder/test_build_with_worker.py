"""The issue's must-show: 200 samples and 10 five-turn dialogues built by a real worker that is killed
mid-stage and replaced, with no sample processed twice; the exported records then train the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ml.builder.models import Build, BuildLlmCall, BuildSample, SampleStage, SampleStatus
from ml.builder.runner import start_build
from ml.builder.stages import RESPONSES, SAMPLE_STAGES
from ml.cli import main as ml_cli
from ml.core.training_records import read_records
from tests.conftest import wait_until
from tests.ml.builder.support import make_build, make_taxonomy
from tests.support.builder_llm import builder_responder, calls_by_stage, repeated_prompts
from tests.support.fake_chat_server import running_chat_server
from webapp.jobs import reap_stale_jobs
from webapp.models import Job, JobStatus

pytestmark = [pytest.mark.services, pytest.mark.slow]

# Stale after 3 s: soon enough for a short test, late enough that a live worker's heartbeat, held up
# for a second by a loaded CI machine, is never taken for a dead one.
FAST = {"ECHOSTUDIO_JOB_HEARTBEAT_SECONDS": "0.2", "ECHOSTUDIO_JOB_STALE_AFTER_SECONDS": "3"}
BATCH = 10


def _done(stage: str) -> int:
    return SampleStage.objects.filter(stage=stage, status="done").count()


def test_a_killed_worker_resumes_the_build_without_doing_a_sample_twice(
    worker_factory, settings, tmp_path: Path, capsys
) -> None:
    settings.JOB_STALE_AFTER_SECONDS = 3.0
    settings.JOB_MAX_ATTEMPTS = 3
    env = {
        **FAST,
        "ECHOSTUDIO_MEDIA_ROOT": str(tmp_path / "media"),
        "ECHOSTUDIO_VAR_DIR": str(tmp_path / "var"),
    }
    make_taxonomy()
    # A slow LLM (30 ms an answer) keeps the reasoning stage long enough to be killed in the middle.
    with running_chat_server(builder_responder(delay_s=0.03, spare_dialogue_turns=True)) as server:
        build = make_build(server.base_url, single=200, dialogues=10, batch_size=BATCH, audio_threads=2)
        first = worker_factory(**env)
        start_build(build)

        # when the worker is SIGKILLed while the reasoning stage is half-way
        wait_until(lambda: _done(RESPONSES) >= 40, 300, f"reasoning never got going:\n{first.log_text()}")
        first.kill()
        done_before_kill = set(
            SampleStage.objects.filter(stage=RESPONSES, status="done").values_list("sample_id", flat=True)
        )
        wait_until(lambda: bool(reap_stale_jobs()), 20, "the dead worker's stage job was never reaped")

        # and a new worker takes over
        second = worker_factory(**env)
        wait_until(
            lambda: Build.objects.get(pk=build.pk).export_path != "",
            300,
            f"not finished:\n{second.log_text()}",
        )

    # then the killed stage's job ran twice and everything else once, all succeeded
    stage_jobs = Job.objects.filter(kind="builder_stage")
    assert set(stage_jobs.values_list("status", flat=True)) == {JobStatus.SUCCEEDED}
    killed = stage_jobs.get(parameters__stage=RESPONSES)
    assert killed.attempts == 2
    assert not stage_jobs.exclude(pk=killed.pk).filter(attempts__gt=1).exists()

    # and no sample was done twice: every row finished once; samples done before the kill were not
    # claimed again; only the batch in flight at the kill was claimed a second time
    rows = SampleStage.objects.filter(build=build)
    assert not rows.exclude(status="done").exists()
    assert rows.filter(
        sample_id__in=done_before_kill, stage=RESPONSES, claims=1, claimed_attempt=1
    ).count() == len(done_before_kill)
    reclaimed = rows.filter(claims__gt=1)
    assert set(reclaimed.values_list("stage", flat=True)) <= {RESPONSES}
    assert reclaimed.count() <= BATCH * 5
    # and the LLM was asked each prompt once, but for those in flight when the worker died
    in_flight_limit = 4 + 2
    assert len(repeated_prompts(server)) <= in_flight_limit
    calls = calls_by_stage(server)
    assert calls["trajectories"] == 10
    assert calls[RESPONSES] <= rows.filter(stage=RESPONSES).count() + in_flight_limit
    # (a request the kill cut off mid-send reaches the server with no JSON body: it asked nothing)
    assert BuildLlmCall.objects.filter(build=build).count() == len(
        {json.dumps(r.json, sort_keys=True) for r in server.chat_requests if isinstance(r.json, dict)}
    )

    # and the counts add up stage by stage, with the drops and their reasons recorded
    for stage in SAMPLE_STAGES:
        counts = build.stage(stage).counts
        assert counts["made"] == counts["kept"] + counts["dropped"] == rows.filter(stage=stage).count()
    assert build.stage("query_filter").counts["reasons"].get("non_triviality", 0) > 0

    # and the export holds every finished sample, single- and multi-turn, with provenance
    build.refresh_from_db()
    export = Path(build.export_path)
    records = read_records(export / "records.jsonl")
    finished = BuildSample.objects.filter(build=build, status=SampleStatus.ACTIVE)
    assert len(records) == finished.count() > 120
    for dialogue in build.dialogues.all():
        assert len({turn.status for turn in dialogue.turns.all()}) == 1
    dialogue_turns = [row.record for row in records if row.record.dialogue_id]
    dropped_dialogues = {
        stage: build.stage(stage).counts["reasons"]
        for stage in SAMPLE_STAGES
        if build.stage(stage).counts["reasons"]
    }
    assert dialogue_turns, f"every dialogue was dropped; drops by stage: {dropped_dialogues}"
    assert {turn.turn for turn in dialogue_turns} == {1, 2, 3, 4, 5}
    assert all(len(turn.history) == turn.turn - 1 for turn in dialogue_turns)
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["provenance"]["models"] == ["writer-a", "writer-b"]
    assert set(manifest["provenance"]["stage_versions"]) >= set(SAMPLE_STAGES)

    # when the tiny model trains on the records from the command line, then it learns a step
    status = ml_cli(
        [
            "sft",
            "--data",
            str(export / "records.jsonl"),
            "--model",
            "tiny",
            "--output",
            str(tmp_path / "sft"),
            "--max-steps",
            "2",
            "--batch-size",
            "2",
            "--lora-rank",
            "4",
            "--device",
            "cpu",
        ]
    )
    assert status == 0
    metadata = json.loads((tmp_path / "sft" / "metadata.json").read_text())
    # The finished build's export is its version 1: the checkpoint names that versioned snapshot.
    assert metadata["dataset_snapshot_ids"] == [manifest["snapshot"]] == [f"build-{build.pk}/v1"]
