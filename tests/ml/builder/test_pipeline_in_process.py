"""A small build run stage by stage in this process: every stage counts, drops and keeps what it should."""

from __future__ import annotations

from ml.builder.models import BuildSample, SampleStage, SampleStatus
from ml.builder.runner import start_build
from ml.builder.stages import SAMPLE_STAGES
from tests.ml.builder.support import make_build, make_taxonomy, run_queued_jobs
from tests.support.builder_llm import builder_responder, calls_by_stage, repeated_prompts
from tests.support.fake_chat_server import running_chat_server
from webapp.models import JobStatus


def test_a_small_build_runs_every_stage_once_per_sample(transactional_db, media_root, queued_here) -> None:
    # given a taxonomy and a build of 12 samples and 2 dialogues against the test LLM
    make_taxonomy()
    with running_chat_server(builder_responder()) as server:
        build = make_build(server.base_url, single=12, dialogues=2)

        # when the build runs to its end
        start_build(build)
        jobs = run_queued_jobs()

    # then every job succeeded, each stage ran once per surviving sample, no prompt was paid twice
    assert [job.status for job in jobs] == [JobStatus.SUCCEEDED] * len(jobs), [job.error for job in jobs]
    assert repeated_prompts(server) == []
    assert server.max_in_flight <= 4 + 2  # the two endpoints' max_concurrency
    assert {
        str(request.json.get("model")) for request in server.chat_requests if isinstance(request.json, dict)
    } == {
        "writer-a",
        "writer-b",
    }
    assert calls_by_stage(server)["trajectories"] == 2
    assert SampleStage.objects.filter(build=build).exclude(status="done").count() == 0
    assert not SampleStage.objects.filter(build=build, claims__gt=1).exists()
    for stage in SAMPLE_STAGES:
        row = build.stage(stage)
        assert row.status == "done", stage
        assert row.counts["made"] == row.counts["kept"] + row.counts["dropped"]
    kept = BuildSample.objects.filter(build=build, status=SampleStatus.ACTIVE)
    assert kept.exists()
    assert all(sample.response_audio_key and sample.output.startswith("<think>") for sample in kept)
    # and the word a query's writer stressed is voiced with emphasis and labelled, and only that one
    voiced = BuildSample.objects.filter(build=build).exclude(user_audio_key="")
    assert any(sample.stressed_word for sample in voiced)  # about 7 in 10 test-LLM queries name one
    assert all(sample.voice["emphasis"] == sample.stressed_word for sample in voiced)
    # where the audio is heard to stress it (against the same words read neutrally)
    heard = [sample for sample in kept if sample.speech["stress"]["agrees"]]
    asked = [sample for sample in kept if sample.stressed_word]
    assert sum(sample in heard for sample in asked) >= 0.8 * len(asked)
    for sample in kept:
        labelled = [sample.stressed_word] if sample.stressed_word and sample in heard else []
        assert sample.perception["stressed_words"] == labelled
        assert ('stress on "honestly"' in sample.output) == bool(labelled)
    # and the perception stage measured every kept turn's rate against its neutral reading
    assert all(sample.speech["rate_ratio"] and sample.speech["rate_level"] for sample in kept)
    dialogue_turns = [sample for sample in kept if sample.dialogue_id]
    assert all(sample.speech["speaker_similarity"] is not None for sample in dialogue_turns)
    # and a dialogue is kept or dropped whole, never with a hole
    for dialogue in build.dialogues.all():
        assert len({turn.status for turn in dialogue.turns.all()}) == 1
    build.refresh_from_db()
    assert build.status == "succeeded" and build.export_path


def test_a_stage_split_into_shards_is_done_once_and_moves_on_once(
    transactional_db, media_root, queued_here
) -> None:
    # given a build whose stages each run as three jobs
    make_taxonomy()
    with running_chat_server(builder_responder()) as server:
        build = make_build(server.base_url, single=6, dialogues=1, shards=3, batch_size=2)
        start_build(build)
        jobs = run_queued_jobs()

    # then each stage had three jobs, every one succeeded, and no sample or prompt was done twice
    stage_jobs = [job for job in jobs if job.kind == "builder_stage" and job.parameters["stage"] != "plan"]
    assert len(stage_jobs) == 3 * len(SAMPLE_STAGES)
    assert {job.status for job in jobs} == {JobStatus.SUCCEEDED}
    assert repeated_prompts(server) == []
    assert not SampleStage.objects.filter(build=build, claims__gt=1).exists()
    assert [job.kind for job in jobs].count("builder_export") == 1
    # and each tells its rows: a stage job the samples it did, the export (all or nothing) its records
    tallies = [
        job.result["rows"] for job in stage_jobs if job.result and job.parameters["stage"] == "queries"
    ]
    assert sum(tally["total"] for tally in tallies) == 11
    export = next(job.result["rows"] for job in jobs if job.kind == "builder_export" and job.result)
    assert export["status"] == "succeeded" and export["total"] > 0


def test_a_build_may_check_consistency_with_a_local_model(
    transactional_db, media_root, queued_here, tmp_path
) -> None:
    from ml.builder.stages import CONSISTENCY
    from tests.ml.builder.logic.test_local_classifier import tiny_classifier

    # given a local classifier that hears everything as sad, and a build of sad and happy samples
    model = tiny_classifier(tmp_path / "emotion-model", "sad")
    make_taxonomy()
    with running_chat_server(builder_responder()) as server:
        build = make_build(
            server.base_url,
            single=8,
            dialogues=0,
            emotions=["sad", "happy"],
            consistency_method="local",
            consistency_model_path=str(model),
        )
        start_build(build)
        jobs = run_queued_jobs()

    # then the consistency stage asked the model: sad samples kept, happy ones dropped as inconsistent
    assert {job.status for job in jobs} == {JobStatus.SUCCEEDED}
    checked = BuildSample.objects.filter(build=build).exclude(consistency={})
    assert {sample.consistency["method"] for sample in checked} == {"local-model:emotion-model"}
    kept_at_consistency = {
        row.sample.emotion
        for row in SampleStage.objects.filter(build=build, stage=CONSISTENCY, outcome="kept").select_related(
            "sample"
        )
    }
    assert kept_at_consistency == {"sad"}
    assert build.stage(CONSISTENCY).counts["reasons"].get("inconsistent_emotion", 0) > 0
