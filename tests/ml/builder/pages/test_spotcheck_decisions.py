"""Spot-check decisions: claimed one at a time, stored with reasons and the stage blamed, fixes
checked by the workbench's label rules, drops taken out of the export."""

from __future__ import annotations

import pytest

from ml.builder.models import BuildSample, SpotCheck
from ml.builder.pages.queue import HUMAN_DROP, Decision, corrections, decide, draw_spot_checks
from ml.builder.pages.rules import DecisionProblem
from tests.ml.builder.pages.spotcheck_builds import finished_build, taken
from webapp.roles import Role


@pytest.fixture
def build(db):
    build = finished_build(single=6)
    draw_spot_checks(build, count=4)
    return build


def test_two_annotators_get_different_checks_and_keep_their_own(build, make_user) -> None:
    first, second = make_user(Role.ANNOTATOR), make_user(Role.ANNOTATOR)
    mine = taken(first)
    theirs = taken(second)
    assert mine is not None and theirs is not None and mine.pk != theirs.pk
    assert taken(first) == mine  # the open one comes back until it is decided


def test_keep_is_stored_without_reasons(build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    check = decide(taken(annotator), annotator, Decision("keep"))
    check.refresh_from_db()
    assert (check.verdict, check.reasons, check.stage) == ("keep", [], "")
    assert check.is_submitted


def test_drop_stores_reasons_and_blamed_stage_and_leaves_the_export(build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    check = taken(annotator)
    decide(check, annotator, Decision("drop", ("audio_wrong_emotion",), note="sounds cheerful"))
    check.refresh_from_db()
    assert (check.verdict, check.reasons, check.stage, check.note) == (
        "drop",
        ["audio_wrong_emotion"],
        "consistency",
        "sounds cheerful",
    )
    check.sample.refresh_from_db()
    assert (check.sample.status, check.sample.drop_reason, check.sample.dropped_at) == (
        "dropped",
        HUMAN_DROP,
        "",
    )
    assert check.sample not in BuildSample.objects.filter(build=build).finished()


def test_a_changed_mind_brings_a_dropped_sample_back(build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    check = taken(annotator)
    decide(check, annotator, Decision("drop", ("query_unnatural",)))
    decide(check, annotator, Decision("keep"))
    check.sample.refresh_from_db()
    assert check.sample.status == "active"


def test_fix_keeps_the_corrected_labels_and_response(build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    check = taken(annotator)
    decide(
        check,
        annotator,
        Decision(
            "fix",
            ("perception_wrong",),
            perception={"emotion": "angry", "polarity": "negative"},
            tom={"recommended_strategies": ["reassurance"]},
            response="That must feel unfair.",
        ),
    )
    check.refresh_from_db()
    assert check.stage == "perception"
    assert check.perception["emotion"] == "angry" and check.perception["situation"] == "missed a promotion"
    assert check.tom["recommended_strategies"] == ["reassurance"]
    assert corrections(build) == {
        check.sample_id: {
            "perception": check.perception,
            "tom": check.tom,
            "response": "That must feel unfair.",
        }
    }
    check.sample.refresh_from_db()
    assert check.sample.perception["emotion"] == "sad"  # the machine's labels stay as made


def test_fix_with_labels_outside_the_vocabulary_is_refused_and_nothing_stored(build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    check = taken(annotator)
    with pytest.raises(DecisionProblem, match=r"Primary emotion: 'melancholy' is not one of"):
        decide(check, annotator, Decision("fix", ("perception_wrong",), perception={"emotion": "melancholy"}))
    with pytest.raises(DecisionProblem, match="Unknown strategies"):
        decide(
            check, annotator, Decision("fix", ("strategy_wrong",), tom={"recommended_strategies": ["hugs"]})
        )
    assert not SpotCheck.objects.get(pk=check.pk).is_submitted


def test_a_fix_that_changes_nothing_is_refused(build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    with pytest.raises(DecisionProblem, match="nothing was changed"):
        decide(
            taken(annotator),
            annotator,
            Decision("fix", ("perception_wrong",), perception={"emotion": "sad"}),
        )


def test_nobody_decides_someone_elses_check(build, make_user) -> None:
    owner, other = make_user(Role.ANNOTATOR), make_user(Role.ANNOTATOR)
    check = taken(owner)
    with pytest.raises(DecisionProblem, match="someone else"):
        decide(check, other, Decision("keep"))
