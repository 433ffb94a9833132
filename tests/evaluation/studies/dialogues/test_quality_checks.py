"""Quality checks of a dialogue study: a practice conversation first, not counted, and a trapping
conversation whose replaced reply screens the raters who did not listen."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.outputs.models import ModelOutput
from evaluation.studies.design import trap_sentence
from evaluation.studies.models import StudyAssignment, StudyStimulus, StudyTurn
from evaluation.studies.reports import screen_study, study_rating_rows, summarise_study
from evaluation.studies.workflows import submit_turn_rating
from tests.evaluation.studies.dialogues.support import (
    build_dialogue_world,
    make_dialogue_study,
    play_and_rate_dialogue,
)
from webapp.roles import Role

TRAP_SCORE = 2


@pytest.fixture
def checked_study(make_user, users):
    world = build_dialogue_world(make_user, n_systems=2, n_dialogues=4, turns=3, topics=("job", "loss"))
    panel = [make_user(Role.EVALUATOR, f"rater-{n}") for n in range(3)]
    study = make_dialogue_study(
        world,
        panel,
        users["admin"],
        items_per_system=2,
        training_count=1,
        trap_count=1,
        trap_score=TRAP_SCORE,
        dimensions=["naturalness"],
        seed=4,
    )
    return study, panel


def _rate_everything(study, rater, trap_answer: int, everything_else) -> None:
    """Rate every conversation of the rater's queue: `trap_answer` on the trapping turn."""
    trap_turn = next(
        reply
        for reply in StudyTurn.objects.filter(stimulus__study=study, stimulus__kind="trap")
        if reply.expected
    )
    for assignment in StudyAssignment.objects.filter(study=study, evaluator=rater).order_by("position"):

        def score(turn: int, dimension: str, assignment=assignment) -> int:
            if assignment.stimulus_id == trap_turn.stimulus_id and turn == trap_turn.turn:
                return trap_answer
            return everything_else(assignment, turn)

        play_and_rate_dialogue(assignment, score)


def test_a_rater_who_misses_the_trapping_turn_is_flagged_and_practice_never_counts(checked_study):
    study, (attentive, careless, other) = checked_study

    # given every rater rates every conversation, with varied scores; the careless one answers 5
    # where the trapping turn asked for 2
    def varied(assignment, turn: int) -> int:
        return 1 + (assignment.position + turn) % 5

    _rate_everything(study, attentive, TRAP_SCORE, varied)
    _rate_everything(study, careless, 5, varied)
    _rate_everything(study, other, TRAP_SCORE, varied)

    # then the screening flags the careless rater for the one trapping turn, and only them
    reports = {report.rater: report for report in screen_study(study)}
    assert (reports[careless.username].traps_checked, reports[careless.username].traps_failed) == (1, 1)
    assert "failed 1 of 1 trapping items" in reports[careless.username].reasons
    assert (reports[attentive.username].traps_checked, reports[attentive.username].traps_failed) == (1, 0)
    assert not any("trapping" in reason for reason in reports[attentive.username].reasons)
    # and the figures rest on rated conversations alone: practice and trap ratings count for nothing
    rows = study_rating_rows(study)
    rated = [row for row in rows if row.kind == "rated"]
    assert {row.kind for row in rows} == {"rated", "trap", "training"}
    summary = summarise_study(study, rows)
    assert summary.n_ratings == len(rated)


def test_the_practice_conversation_says_so_and_comes_first(checked_study):
    study, panel = checked_study
    rater = panel[0]
    first = StudyAssignment.objects.filter(study=study, evaluator=rater).order_by("position").first()
    assert first is not None and first.stimulus.kind == StudyStimulus.Kind.TRAINING

    client = Client()
    client.force_login(rater)
    page = client.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
    assert 'data-testid="practice"' in page and "not counted" in page


def test_a_silent_conversation_shows_its_trap_instead_of_playing_it(make_user, users):
    # given a content-only study of a text-only system, with one trapping conversation
    world = build_dialogue_world(make_user, n_systems=1, n_dialogues=2, turns=3, prefix="TXT")
    ModelOutput.objects.update(response_audio_key="")
    reader = make_user(Role.EVALUATOR, "reader")
    study = make_dialogue_study(
        world, [reader], users["admin"], items_per_system=2, trap_count=1, dimensions=["content_helpfulness"]
    )

    # then the replaced reply is the instruction in words, with no audio to give it away
    trap = study.stimuli.get(kind=StudyStimulus.Kind.TRAP)
    replies = list(trap.turns.order_by("turn"))
    assert all(reply.audio_key == "" for reply in replies)
    (instruction,) = [reply for reply in replies if reply.expected]
    assert instruction.response_text == trap_sentence(study.trap_score)
    # and every conversation, the trap too, can be rated turn by turn without playing anything
    for assignment in StudyAssignment.objects.filter(study=study, evaluator=reader).order_by("position"):
        for reply in assignment.stimulus.turns.order_by("turn"):
            submit_turn_rating(assignment.pk, reply.turn, {"content_helpfulness": 2})
    assert not StudyAssignment.objects.filter(study=study, submitted_at__isnull=True).exists()


def test_a_trap_before_the_last_turn_opens_once_the_replies_before_it_played(checked_study):
    # given a trapping conversation whose replaced reply is not the last (a longer spoken
    # instruction between short replies)
    study, (rater, *_) = checked_study
    trap = study.stimuli.get(kind=StudyStimulus.Kind.TRAP)
    instruction = next(reply for reply in trap.turns.all() if reply.expected)
    if instruction.turn == trap.turns.count():
        last = trap.turns.get(turn=instruction.turn)
        earlier = trap.turns.get(turn=instruction.turn - 1)
        StudyTurn.objects.filter(pk=earlier.pk).update(
            expected=last.expected, audio_key=last.audio_key, audio_seconds=last.audio_seconds
        )
        StudyTurn.objects.filter(pk=last.pk).update(expected={})

    # when the rater plays and rates their whole queue, the trap rated as asked
    _rate_everything(study, rater, TRAP_SCORE, lambda assignment, turn: 3)

    # then every conversation was submitted, the trap passed
    assert not StudyAssignment.objects.filter(
        study=study, evaluator=rater, submitted_at__isnull=True
    ).exists()
    report = next(report for report in screen_study(study) if report.rater == rater.username)
    assert (report.traps_checked, report.traps_failed) == (1, 0)
