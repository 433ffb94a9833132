"""Comparison studies end to end without a browser: creation, counterbalancing as stored, the gate,
answers and refusals, and the figures they give."""

from __future__ import annotations

from collections import Counter

import pytest

from evaluation.studies.comparison_reports import comparison_figures, figures_csv, figures_json
from evaluation.studies.comparisons import HIDDEN_REFERENCE, LOW_ANCHOR, MID_ANCHOR
from evaluation.studies.design import StudyDesignError
from evaluation.studies.models import StudySlot, StudyTrialPart
from evaluation.studies.trials import answer_refusal
from evaluation.studies.workflows import RatingRefused, record_slot_playback, submit_trial
from tests.evaluation.studies.comparisons.support import answer_everything, make_comparison, play_trial
from tests.evaluation.studies.support import build_world
from webapp.roles import Role


def _system(slot: StudySlot) -> str:
    return slot.part.sample.system.name if slot.part.sample.system else ""


def _prefer(letter: str):
    """Answer every pair for SecretSystem<letter>, whichever place it was heard in."""

    def answer(assignment, slots):
        second_is_it = _system(slots[1]).endswith(letter)
        first_is_it = _system(slots[0]).endswith(letter)
        return {2: 1 if second_is_it else (-1 if first_is_it else 0)}

    return answer


def test_a_ccr_study_against_a_reference_balances_orders_and_gives_cmos(make_user, users):
    world = build_world(make_user, n_systems=3, n_items=4)
    raters = [users["evaluator"], *(make_user(Role.EVALUATOR) for _ in range(3))]
    study = make_comparison(
        world,
        raters,
        users["admin"],
        "ccr",
        reference_system=world.systems[0],
        items_per_system=4,
        ratings_per_output=2,
    )
    trials = study.stimuli.filter(parts__isnull=False).distinct()
    assert trials.count() == 4 * 2  # each item: B vs A, C vs A
    first_places: Counter[str] = Counter()
    for rater in raters:
        own = StudySlot.objects.filter(assignment__evaluator=rater, position=1).select_related("part")
        flips = sum(slot.part.order == 1 for slot in own)
        assert abs(2 * flips - own.count()) <= 1  # reference first in half of each rater's pairs
        first_places.update(slot.part.role for slot in own)
    assert first_places["reference"] == first_places["system"]

    def ccr(assignment, slots):
        # B is 2 better than the reference, C 1 worse: the vote is about the second heard.
        value = {"SecretSystemA": 0, "SecretSystemB": 2, "SecretSystemC": -1}
        return {2: value[_system(slots[1])] - value[_system(slots[0])]}

    for rater in raters:
        answer_everything(study, rater, ccr)
    figures = comparison_figures(study)
    cells = {cell.system: cell for cell in figures.cmos}
    assert (
        cells["SecretSystemB"].mean == pytest.approx(2) and cells["SecretSystemB"].versus == "SecretSystemA"
    )
    assert cells["SecretSystemC"].mean == pytest.approx(-1) and cells["SecretSystemC"].n_votes == 8
    assert [time.trials for time in figures.times] == [4] * 4
    assert "cmos,SecretSystemB,SecretSystemA,2.0000" in figures_csv(figures)


def test_an_ab_study_ranks_by_bradley_terry(make_user, users):
    world = build_world(make_user, n_systems=3, n_items=3)
    raters = [users["evaluator"], make_user(Role.EVALUATOR), make_user(Role.EVALUATOR)]
    study = make_comparison(world, raters, users["admin"], "ab", items_per_system=3, ratings_per_output=2)
    answer_everything(study, raters[0], _prefer("C"))
    answer_everything(study, raters[1], _prefer("B"))
    answer_everything(study, raters[2], _prefer("C"))
    figures = comparison_figures(study)
    assert figures.preference is not None and figures.preference.n_votes == 9 * 2
    ranked = sorted(figures.preference.scores, key=lambda score: -(score.score or -99))
    assert ranked[0].system == "SecretSystemC"
    exported = figures_json(figures)
    assert exported["preference"]["win_rate"]["SecretSystemC"]["SecretSystemA"] == 1.0


def test_a_mushra_trial_has_hidden_reference_anchors_and_post_screening(make_user, users):
    world = build_world(make_user, n_systems=3, n_items=3)
    careless = make_user(Role.EVALUATOR, "careless")
    raters = [users["evaluator"], careless]
    study = make_comparison(world, raters, users["admin"], "mushra", items_per_system=3, ratings_per_output=2)
    trial = study.stimuli.filter(parts__isnull=False).distinct().first()
    assert trial is not None
    roles = dict(trial.parts.values_list("role", "sample__audio_key"))
    assert set(roles) == {"reference", "hidden_reference", "system", "low_anchor", "mid_anchor"}
    assert roles["hidden_reference"] != roles["reference"]  # its own key, so its link differs
    slots = StudySlot.objects.filter(
        assignment__evaluator=careless, assignment__stimulus=trial
    ).select_related("part")
    assert [slot.position for slot in slots.order_by("position")] == [0, 1, 2, 3, 4, 5]
    assert slots.get(position=0).part.role == StudyTrialPart.Role.REFERENCE

    def scores(hidden_score):
        def answer(assignment, slots):
            by_role = {"hidden_reference": hidden_score, "low_anchor": 10, "mid_anchor": 40, "system": 60}
            return {slot.position: by_role[slot.part.role] for slot in slots if slot.position}

        return answer

    answer_everything(study, users["evaluator"], scores(100))
    answer_everything(study, careless, scores(50))
    figures = comparison_figures(study)
    assert [entry.rater for entry in figures.excluded] == ["careless"]
    assert "hidden reference below 90 in 3 of 3 trials" in figures.excluded[0].reasons[0]
    boxes = {box.condition: box for box in figures.mushra}
    assert list(boxes) == [HIDDEN_REFERENCE, "SecretSystemB", "SecretSystemC", MID_ANCHOR, LOW_ANCHOR]
    assert boxes[HIDDEN_REFERENCE].median == 100 and boxes[HIDDEN_REFERENCE].n == 3  # careless left out
    assert boxes[LOW_ANCHOR].median == 10


def test_a_trial_is_answered_only_after_every_sample_played_and_only_once(make_user, users):
    world = build_world(make_user, n_systems=2, n_items=2)
    study = make_comparison(world, [users["evaluator"]], users["admin"], "ccr", items_per_system=2)
    first, second = study.assignments.order_by("position")
    with pytest.raises(RatingRefused, match="Play A to the end"):
        submit_trial(first.pk, {2: 1})
    slots = list(first.slots.order_by("position"))
    with pytest.raises(RatingRefused, match="Open the trial"):
        record_slot_playback(slots[0].pk)
    play_trial(first)
    with pytest.raises(RatingRefused, match="from -3 to"):
        submit_trial(first.pk, {2: 4})
    with pytest.raises(RatingRefused, match="from -3 to"):
        submit_trial(first.pk, {1: 1, 2: 1})
    play_trial(second)
    with pytest.raises(RatingRefused, match="order"):
        submit_trial(second.pk, {2: 0})
    submit_trial(first.pk, {2: -2})
    with pytest.raises(RatingRefused, match="already answered"):
        submit_trial(first.pk, {2: 3})
    assert StudySlot.objects.get(assignment=first, position=2).score == -2
    assert StudySlot.objects.get(assignment=first, position=1).score is None


def test_a_playback_report_sooner_than_both_samples_could_play_is_refused(make_user, users):
    world = build_world(make_user, n_systems=2, n_items=1)
    study = make_comparison(world, [users["evaluator"]], users["admin"], "ab", items_per_system=1)
    assignment = study.assignments.get()
    slots = list(assignment.slots.select_related("part__sample").order_by("position"))
    play_trial(assignment)  # both recorded, with enough time since showing
    from django.utils import timezone

    assignment.refresh_from_db()
    StudySlot.objects.filter(assignment=assignment).update(played_at=None)
    # Shown just now: the first sample cannot have played to its end yet.
    type(assignment).objects.filter(pk=assignment.pk).update(presented_at=timezone.now())
    with pytest.raises(RatingRefused, match="one after another"):
        record_slot_playback(slots[0].pk)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kind": "mushra", "reference_system": None}, "needs a reference"),
        ({"kind": "mushra", "anchors": ["mid"]}, "low anchor"),
        ({"kind": "ccr", "anchors": ["low"]}, "anchors belong to MUSHRA"),
        ({"kind": "ab", "dimensions": ["naturalness", "prosody"]}, "one audio dimension"),
        ({"kind": "ab", "dimensions": ["content_helpfulness"]}, "one audio dimension"),
        ({"kind": "ab", "reference_system": "first"}, "leave the reference empty"),
    ],
)
def test_designs_that_cannot_run_are_refused_with_a_reason(make_user, users, overrides, message):
    world = build_world(make_user, n_systems=2, n_items=2)
    if overrides.get("reference_system") == "first":
        overrides = {**overrides, "reference_system": world.systems[0]}
    kind = overrides.pop("kind")
    with pytest.raises(StudyDesignError, match=message):
        make_comparison(world, [users["evaluator"]], users["admin"], kind, **overrides)


def test_a_dcr_study_plays_the_reference_first_and_gives_dmos(make_user, users):
    world = build_world(make_user, n_systems=3, n_items=3)
    raters = [users["evaluator"], make_user(Role.EVALUATOR)]
    study = make_comparison(
        world, raters, users["admin"], "dcr", reference_system=world.systems[0], items_per_system=3
    )
    firsts = StudySlot.objects.filter(assignment__study=study, position=1).values_list(
        "part__role", flat=True
    )
    assert set(firsts) == {"reference"} and len(firsts) == 2 * 3 * 2

    def dcr(assignment, slots):
        return {2: {"SecretSystemB": 4, "SecretSystemC": 2}[_system(slots[1])]}

    for rater in raters:
        answer_everything(study, rater, dcr)
    assert answer_refusal("dcr", [1, 2], {2: 0}) == "Choose how degraded B is against A, from 1 to 5."
    assert answer_refusal("dcr", [1, 2], {2: 5}) is None
    cells = {cell.system: cell for cell in comparison_figures(study).cmos}
    assert cells["SecretSystemB"].mean == pytest.approx(4) and cells["SecretSystemC"].mean == pytest.approx(2)
    assert "dmos,SecretSystemB,SecretSystemA,4.0000" in figures_csv(comparison_figures(study))
