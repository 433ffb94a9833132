"""Dropping one turn of a five-turn dialogue asks what happens to the rest of it (cut the dialogue
there, or drop it whole), records the choice, and never removes a turn a checker kept unless told to."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from ml.builder.export import export_build
from ml.builder.models import Build, BuildSample, SpotCheck
from ml.builder.pages.queue import HUMAN_DROP, Decision, decide
from ml.builder.pages.rules import (
    CUT,
    CUT_AWAY,
    DIALOGUE_DROPPED,
    WHOLE_DIALOGUE,
    DecisionProblem,
    kept_turns_removed,
    removed_turns,
)
from ml.core.training_records import RECORDS_FILE, TrainingRecord
from tests.ml.builder.pages.spotcheck_builds import finished_build
from tests.support.listening import listen
from webapp.models import User
from webapp.roles import Role

DROP_QUERY = ("query_unnatural",)


def test_a_cut_removes_the_dropped_turn_and_every_later_one() -> None:
    assert removed_turns(range(1, 6), {3: CUT}, "dropped") == {3: "dropped", 4: CUT_AWAY, 5: CUT_AWAY}


def test_a_whole_dialogue_drop_removes_every_turn_and_wins_over_a_cut() -> None:
    removed = removed_turns(range(1, 6), {4: CUT, 2: WHOLE_DIALOGUE}, "dropped")
    assert removed == {
        1: DIALOGUE_DROPPED,
        2: "dropped",
        3: DIALOGUE_DROPPED,
        4: "dropped",
        5: DIALOGUE_DROPPED,
    }


def test_the_earliest_cut_decides_where_the_dialogue_ends() -> None:
    assert set(removed_turns(range(1, 6), {4: CUT, 2: CUT}, "dropped")) == {2, 3, 4, 5}


def test_kept_turns_a_choice_removes_are_named_but_not_the_one_decided() -> None:
    removed = removed_turns(range(1, 6), {2: CUT}, "dropped")
    assert kept_turns_removed(removed, kept=[1, 2, 4, 5], deciding=2) == [4, 5]


@pytest.fixture
def dialogue(db: None) -> Build:
    build = finished_build(single=0, dialogues=1, turns=5)
    Build.objects.filter(pk=build.pk).update(turns_per_dialogue=5)
    return build


def _check_of(sample: BuildSample, annotator: User) -> SpotCheck:
    """Open a check of the sample for the annotator, its audio played to the end."""
    check = SpotCheck.objects.create(build=sample.build, sample=sample, annotator=annotator)
    listen(annotator, sample.user_audio_key, sample.response_audio_key)
    return check


def _check(build: Build, turn: int, annotator: User) -> SpotCheck:
    return _check_of(BuildSample.objects.get(build=build, turn=turn), annotator)


def _states(build: Build) -> dict[int, tuple[str, str]]:
    rows = BuildSample.objects.filter(build=build).values_list("turn", "status", "drop_reason")
    return {turn: (status, reason) for turn, status, reason in rows}


def test_a_dropped_turn_of_a_dialogue_needs_a_choice_for_the_rest(dialogue: Build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    check = _check(dialogue, 3, annotator)

    with pytest.raises(DecisionProblem, match="say what happens to the rest of it"):
        decide(check, annotator, Decision("drop", DROP_QUERY))

    assert not SpotCheck.objects.get(pk=check.pk).is_submitted
    assert {status for status, _ in _states(dialogue).values()} == {"active"}


def test_cutting_after_a_turn_keeps_the_turns_before_it(dialogue: Build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)

    check = decide(_check(dialogue, 3, annotator), annotator, Decision("drop", DROP_QUERY, rest=CUT))

    assert (check.rest, check.removed_kept) == (CUT, [])
    assert _states(dialogue) == {
        1: ("active", ""),
        2: ("active", ""),
        3: ("dropped", HUMAN_DROP),
        4: ("dropped", CUT_AWAY),
        5: ("dropped", CUT_AWAY),
    }


def test_dropping_the_whole_dialogue_removes_every_turn(dialogue: Build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)

    decide(_check(dialogue, 3, annotator), annotator, Decision("drop", DROP_QUERY, rest=WHOLE_DIALOGUE))

    states = _states(dialogue)
    assert states[3] == ("dropped", HUMAN_DROP)
    assert {states[turn] for turn in (1, 2, 4, 5)} == {("dropped", DIALOGUE_DROPPED)}


def test_a_kept_turn_is_never_removed_without_saying_so(dialogue: Build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    decide(_check(dialogue, 4, annotator), annotator, Decision("keep"))
    dropping = _check(dialogue, 2, annotator)

    with pytest.raises(DecisionProblem, match="turn 4 of this dialogue was kept by a spot-check"):
        decide(dropping, annotator, Decision("drop", DROP_QUERY, rest=CUT))
    assert _states(dialogue)[4] == ("active", "")

    check = decide(dropping, annotator, Decision("drop", DROP_QUERY, rest=CUT, remove_kept=True))
    assert check.removed_kept == [4]
    assert _states(dialogue)[4] == ("dropped", CUT_AWAY)


def test_a_changed_mind_brings_the_cut_turns_back(dialogue: Build, make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    check = decide(_check(dialogue, 2, annotator), annotator, Decision("drop", DROP_QUERY, rest=CUT))

    decide(check, annotator, Decision("keep"))

    assert SpotCheck.objects.get(pk=check.pk).rest == ""
    assert {status for status, _ in _states(dialogue).values()} == {"active"}


def test_the_page_asks_for_the_rest_and_says_which_turns_were_kept(
    dialogue: Build, make_user, client
) -> None:
    annotator = make_user(Role.ANNOTATOR)
    decide(_check(dialogue, 5, annotator), annotator, Decision("keep"))
    check = _check(dialogue, 3, annotator)
    client.force_login(annotator)
    url = reverse("ml:builder:spot_check", args=[check.pk])

    page = client.get(url).content.decode()
    assert 'data-testid="rest-of-dialogue"' in page and "Cut the dialogue here" in page
    assert "Kept or fixed by a spot-check: turn 5." in page

    refused = client.post(url, {"verdict": "drop", "reasons": list(DROP_QUERY)})
    assert "say what happens to the rest of it" in refused.content.decode()
    refused = client.post(url, {"verdict": "drop", "reasons": list(DROP_QUERY), "rest": CUT})
    assert "turn 5 of this dialogue was kept" in refused.content.decode()

    client.post(url, {"verdict": "drop", "reasons": list(DROP_QUERY), "rest": CUT, "remove_kept": "on"})
    assert SpotCheck.objects.get(pk=check.pk).rest == CUT


def test_the_export_holds_a_cut_dialogue_s_earlier_turns(tmp_path: Path, media_root: Path, make_user) -> None:
    build = finished_build(single=0, dialogues=2, turns=5, audio=True)
    Build.objects.filter(pk=build.pk).update(turns_per_dialogue=5)
    build.refresh_from_db()
    annotator = make_user(Role.ANNOTATOR)
    cut = BuildSample.objects.get(build=build, external_id="D-1.t3")
    whole = BuildSample.objects.get(build=build, external_id="D-2.t4")
    decide(_check_of(cut, annotator), annotator, Decision("drop", DROP_QUERY, rest=CUT))
    decide(_check_of(whole, annotator), annotator, Decision("drop", DROP_QUERY, rest=WHOLE_DIALOGUE))

    counts = export_build(build, tmp_path)

    lines = (tmp_path / RECORDS_FILE).read_text(encoding="utf-8").splitlines()
    records = [TrainingRecord.from_json(line) for line in lines]
    assert [record.item_id for record in records] == ["D-1.t1", "D-1.t2"]
    assert (counts["dialogues"], counts["dialogues_cut_short"], counts["dialogue_turns"]) == (1, 1, 2)
