"""Per-sample stage state: claims never overlap, a dialogue is claimed whole, a reaped attempt writes nothing."""

from __future__ import annotations

import pytest

from ml.builder import claims
from ml.builder.claims import ClaimLost, SampleResult
from ml.builder.config import BuildConfig
from ml.builder.models import BuildSample, SampleStage
from ml.builder.steps.plan import plan_build
from tests.ml.builder.support import make_build, make_taxonomy
from webapp.models import Job, JobStatus

pytestmark = pytest.mark.django_db


def _job(attempts: int = 1) -> Job:
    return Job.objects.create(kind="builder_stage", status=JobStatus.RUNNING, attempts=attempts)


@pytest.fixture
def build():
    make_taxonomy()
    build = make_build("http://unused/v1", single=6, dialogues=2)
    plan_build(build, BuildConfig.from_json(build.config), lambda fraction, message: None)
    claims.ensure_rows(build.pk, "queries")
    return build


def test_rows_are_made_once_per_sample_whoever_asks(build) -> None:
    assert claims.ensure_rows(build.pk, "queries") == 0
    assert SampleStage.objects.filter(stage="queries").count() == 6 + 2 * 5
    assert SampleStage.objects.filter(stage="queries", head=True).count() == 6 + 2
    claims.ensure_rows(build.pk, "trajectories")
    assert SampleStage.objects.filter(stage="trajectories").count() == 10


def test_two_jobs_never_claim_the_same_sample_and_dialogues_come_whole(build) -> None:
    first, second = _job(), _job()
    units_a = claims.claim_batch(first, build.pk, "queries", 5)
    units_b = claims.claim_batch(second, build.pk, "queries", 5)
    samples_a = {row.sample_id for unit in units_a for row in unit}
    samples_b = {row.sample_id for unit in units_b for row in unit}
    assert samples_a.isdisjoint(samples_b)
    assert samples_a | samples_b == set(BuildSample.objects.values_list("id", flat=True))
    dialogue_units = [unit for unit in units_a + units_b if len(unit) > 1]
    assert [[row.sample.turn for row in unit] for unit in dialogue_units] == [[1, 2, 3, 4, 5]] * 2
    assert claims.claim_batch(_job(), build.pk, "queries", 5) == []


def test_a_reaped_attempt_cannot_finish_what_its_successor_took_back(build) -> None:
    # given an attempt that claimed a unit and then stalled; the job was re-run as attempt 2
    stalled = _job(attempts=1)
    unit = claims.claim_batch(stalled, build.pk, "queries", 1)[0]
    rerun = Job.objects.get(pk=stalled.pk)
    rerun.attempts = 2
    rerun.save(update_fields=["attempts"])

    # when the successor releases the dead claims and claims them itself
    assert claims.release_dead_claims(rerun, build.pk, "queries") == 1
    taken = claims.claim_batch(rerun, build.pk, "queries", 1)[0]
    assert [row.pk for row in taken] == [row.pk for row in unit]

    # then the stalled attempt's result is refused and the successor's is stored once
    with pytest.raises(ClaimLost):
        claims.finish_unit(stalled, unit, [SampleResult(row.sample_id, True) for row in unit])
    claims.finish_unit(rerun, taken, [SampleResult(row.sample_id, False, "coherence") for row in taken])
    row = SampleStage.objects.get(pk=unit[0].pk)
    assert (row.status, row.outcome, row.reason, row.claims, row.claimed_attempt) == (
        "done",
        "dropped",
        "coherence",
        2,
        2,
    )
    assert row.sample.status == "dropped" and row.sample.dropped_at == "queries"


def test_a_dropped_turn_drops_its_dialogue_naming_the_turn() -> None:
    results = claims.drop_whole_dialogue(
        [(1, 1), (2, 2), (3, 3)], [SampleResult(1, True), SampleResult(2, False, "tts_error")]
    )
    assert [(r.sample_id, r.kept, r.reason) for r in results] == [
        (1, False, "dialogue_turn_dropped"),
        (2, False, "tts_error"),
        (3, False, "dialogue_turn_dropped"),
    ]
    assert results[0].detail == "turn 2 was dropped (tts_error)"
    kept = [SampleResult(1, True)]
    assert claims.drop_whole_dialogue([(1, 0)], kept) == kept


def test_a_dialogue_turn_done_for_a_stage_is_not_claimed_again_with_its_head(build) -> None:
    # given a dialogue whose five turns were done for the stage
    job = _job()
    units = claims.claim_batch(job, build.pk, "queries", 100)
    dialogue = next(unit for unit in units if len(unit) == 5)
    for unit in units:
        claims.finish_unit(job, unit, [SampleResult(row.sample_id, True) for row in unit])
    later_turns = [row.pk for row in dialogue[1:]]
    before = {row.pk: (row.claims, row.finished_at) for row in SampleStage.objects.filter(pk__in=later_turns)}

    # when its turn-1 row alone is made pending again (a re-run that redoes that turn only)
    SampleStage.objects.filter(pk=dialogue[0].pk).update(status="pending")
    again = claims.claim_batch(_job(), build.pk, "queries", 100)

    # then only turn 1 is claimed; turns 2-5 stay done, claimed once, never redone
    assert [[row.pk for row in unit] for unit in again] == [[dialogue[0].pk]]
    after = SampleStage.objects.filter(pk__in=later_turns)
    assert {row.status for row in after} == {"done"}
    assert {row.pk: (row.claims, row.finished_at) for row in after} == before


def test_shards_claim_equal_shares_of_what_is_left_near_a_stages_end() -> None:
    assert claims.claim_size(pending=400, size=10, shards=2) == 10
    assert claims.claim_size(pending=15, size=10, shards=2) == 8
    assert claims.claim_size(pending=7, size=10, shards=2) == 4
    assert claims.claim_size(pending=1, size=10, shards=3) == 1
    assert claims.claim_size(pending=0, size=10, shards=2) == 1
    assert claims.claim_size(pending=5, size=10, shards=1) == 10  # alone, nothing to balance


def test_a_shard_near_the_end_leaves_the_other_its_share(build) -> None:
    # given 8 pending units (6 samples, 2 dialogues) and a stage shared by two shards
    first = claims.claim_batch(_job(), build.pk, "queries", 10, shards=2)
    second = claims.claim_batch(_job(), build.pk, "queries", 10, shards=2)

    # then the first takes half of what is left, the second half of the rest, and so on to the end
    assert (len(first), len(second)) == (4, 2)
    rest = claims.claim_batch(_job(), build.pk, "queries", 10, shards=2)
    last = claims.claim_batch(_job(), build.pk, "queries", 10, shards=2)
    assert (len(rest), len(last)) == (1, 1)
    assert claims.claim_batch(_job(), build.pk, "queries", 10, shards=2) == []


def test_a_batch_is_written_in_one_go_each_row_with_its_own_result(build) -> None:
    job = _job()
    units = claims.claim_batch(job, build.pk, "queries", 3)
    samples = [row.sample_id for unit in units for row in unit]
    results = {
        sample_id: SampleResult(
            sample_id,
            index % 2 == 0,
            "" if index % 2 == 0 else "coherence",
            f"d{index}",
            fields={"text": f"said {index}", "features": {"index": index, "words": ["a"] * index}},
            llm_calls=2,  # the same for every row: written as one value, not per row
            prompt_tokens=10 * index,
            completion_tokens=index + 1,
            seconds=index / 4,
        )
        for index, sample_id in enumerate(samples)
    }
    claims.finish_units(job, [(unit, [results[row.sample_id] for row in unit]) for unit in units])
    rows = SampleStage.objects.filter(sample_id__in=samples, stage="queries")
    assert {row.status for row in rows} == {"done"}
    for row in rows:
        result = results[row.sample_id]
        assert (row.outcome, row.reason, row.detail, row.llm_calls, row.prompt_tokens) == (
            "kept" if result.kept else "dropped",
            result.reason,
            result.detail,
            result.llm_calls,
            result.prompt_tokens,
        )
        assert (row.completion_tokens, row.seconds, row.version) == (
            result.completion_tokens,
            result.seconds,
            "queries-1",
        )
        sample, index = row.sample, samples.index(row.sample_id)
        assert (sample.text, sample.features) == (f"said {index}", {"index": index, "words": ["a"] * index})
        assert (sample.status, sample.dropped_at, sample.drop_reason) == (
            ("active", "", "") if result.kept else ("dropped", "queries", "coherence")
        )


def test_a_worker_killed_mid_batch_loses_no_sample_and_does_none_twice(build) -> None:
    # given an attempt that claimed a batch of units, finished some in its head and was killed
    # before writing them; the job was re-run as attempt 2
    killed = _job(attempts=1)
    batch = claims.claim_batch(killed, build.pk, "queries", 3)
    rerun = Job.objects.get(pk=killed.pk)
    rerun.attempts = 2
    rerun.save(update_fields=["attempts"])

    # when the successor takes the batch back and finishes it
    taken_back = claims.release_dead_claims(rerun, build.pk, "queries")
    assert taken_back == sum(len(unit) for unit in batch)
    again = claims.claim_batch(rerun, build.pk, "queries", 3)
    assert sorted(row.pk for unit in again for row in unit) == sorted(
        row.pk for unit in batch for row in unit
    )
    claims.finish_units(
        rerun, [(unit, [SampleResult(row.sample_id, True) for row in unit]) for unit in again]
    )

    # then the killed attempt's late write is refused whole, and every row was done once, by attempt 2
    with pytest.raises(ClaimLost):
        claims.finish_units(
            killed, [(unit, [SampleResult(row.sample_id, False, "x") for row in unit]) for unit in batch]
        )
    rows = SampleStage.objects.filter(pk__in=[row.pk for unit in batch for row in unit])
    assert {(row.status, row.outcome, row.claims, row.claimed_attempt) for row in rows} == {
        ("done", "kept", 2, 2)
    }


def test_a_batch_one_of_whose_units_was_taken_back_writes_nothing(build) -> None:
    # given an attempt holding two units, one of which a successor took back and finished
    stalled = _job(attempts=1)
    first, second = claims.claim_batch(stalled, build.pk, "queries", 2)
    SampleStage.objects.filter(pk__in=[row.pk for row in second]).update(status="pending")
    successor = _job()
    taken = claims.claim_batch(successor, build.pk, "queries", 1)
    assert [row.pk for row in taken[0]] == [row.pk for row in second]
    claims.finish_unit(successor, taken[0], [SampleResult(row.sample_id, True) for row in taken[0]])

    # when the stalled attempt writes both units in one batch
    with pytest.raises(ClaimLost):
        claims.finish_units(
            stalled,
            [
                (unit, [SampleResult(row.sample_id, False, "coherence") for row in unit])
                for unit in (first, second)
            ],
        )

    # then its unit still held is not written either (it stays claimed, for its own retry), and the
    # successor's result stands
    assert {row.status for row in SampleStage.objects.filter(pk__in=[row.pk for row in first])} == {"running"}
    assert {row.outcome for row in SampleStage.objects.filter(pk__in=[row.pk for row in second])} == {"kept"}
    assert not BuildSample.objects.filter(status="dropped").exists()
