"""Creating a dialogue study: (system, dialogue) stimuli with every turn's reply frozen, by spec and by form."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.models import Item
from evaluation.studies.creation.items import GoldSpec
from evaluation.studies.design import StudyDesignError, trap_sentence
from evaluation.studies.models import Study, StudyAssignment, StudyStimulus, StudyTurn
from tests.evaluation.studies.dialogues.support import build_dialogue_world, make_dialogue_study
from tests.evaluation.studies.support import REPLY_SPEECH, spoken, wav_seconds
from webapp.api.tokens import create_token
from webapp.archive import archive
from webapp.roles import Role
from webapp.storage import read_media


@pytest.fixture
def world(make_user):
    return build_dialogue_world(make_user, n_systems=2, n_dialogues=4, turns=3, topics=("job", "loss"))


@pytest.fixture
def panel(make_user):
    return [make_user(Role.EVALUATOR) for _ in range(3)]


def test_each_system_is_rated_on_the_same_dialogues_with_every_turn_frozen(world, panel, users):
    study = make_dialogue_study(world, panel, users["admin"], items_per_system=2, ratings_per_output=2)

    assert study.is_dialogue
    stimuli = list(study.stimuli.order_by("pk"))
    assert len(stimuli) == 4 and {s.kind for s in stimuli} == {StudyStimulus.Kind.RATED}
    by_system = {
        system.pk: {s.dialogue_id for s in stimuli if s.system_id == system.pk} for system in world.systems
    }
    assert len({frozenset(dialogues) for dialogues in by_system.values()}) == 1
    # topics job and loss, 2 dialogues each: one of each
    sampled = next(iter(by_system.values()))
    assert sorted(d.topic for d in world.dialogues if d.pk in sampled) == ["job", "loss"]
    original_keys = {output.response_audio_key for output in world.outputs}
    for stimulus in stimuli:
        replies = list(stimulus.turns.order_by("turn"))
        assert [reply.turn for reply in replies] == [1, 2, 3]
        assert stimulus.item.turn == 1 and stimulus.item.dialogue_id == stimulus.dialogue_id
        for reply in replies:
            assert reply.item.dialogue_id == stimulus.dialogue_id and reply.item.turn == reply.turn
            assert reply.output is not None and reply.output.system_id == stimulus.system_id
            assert reply.response_text == reply.output.response_text
            assert reply.audio_key.startswith("audio/stimulus/") and reply.audio_key not in original_keys
            assert reply.audio_seconds == pytest.approx(wav_seconds(spoken(REPLY_SPEECH)), abs=0.05)
            assert wav_seconds(read_media(reply.audio_key)) == pytest.approx(reply.audio_seconds, abs=0.01)


def test_every_conversation_gets_k_raters_and_never_follows_its_own_dialogue(world, panel, users):
    study = make_dialogue_study(world, panel, users["admin"], items_per_system=2, ratings_per_output=2)

    per_stimulus = Counter(StudyAssignment.objects.filter(study=study).values_list("stimulus_id", flat=True))
    assert len(per_stimulus) == 4 and set(per_stimulus.values()) == {2}
    assert sorted(Counter(study.assignments.values_list("evaluator_id", flat=True)).values()) == [2, 3, 3]
    for evaluator in panel:
        order = list(
            study.assignments.filter(evaluator=evaluator)
            .order_by("position")
            .values_list("stimulus__dialogue_id", flat=True)
        )
        assert all(a != b for a, b in itertools.pairwise(order))


def test_spread_sampling_covers_more_dialogues(world, panel, users):
    study = make_dialogue_study(
        world, panel, users["admin"], items_per_system=2, same_dialogues_for_all=False
    )

    assert not study.same_dialogues_for_all
    assert study.stimuli.values("dialogue_id").distinct().count() == 4


def test_dialogues_missing_a_reply_or_a_recording_are_not_eligible(world, panel, users):
    archive(
        world.outputs[0], actor=users["admin"], reason="withdrawn"
    )  # SecretSystemA's reply to DLG-000 turn 1
    Item.objects.filter(dialogue=world.dialogues[1], turn=2).update(recording=None)

    with pytest.raises(StudyDesignError, match="only 2 dialogues have a usable answer"):
        make_dialogue_study(world, panel, users["admin"], items_per_system=3)
    study = make_dialogue_study(world, panel, users["admin"], items_per_system=2)
    assert set(study.stimuli.values_list("dialogue__external_id", flat=True)) == {"DLG-002", "DLG-003"}


def test_single_turn_studies_leave_dialogue_turns_out(make_user, users, panel):
    dialogues = build_dialogue_world(make_user, n_systems=2, n_dialogues=2)
    # Every output answers a dialogue turn: none is a single-turn answer.
    with pytest.raises(StudyDesignError, match="only 0 items"):
        make_dialogue_study(dialogues, panel, users["admin"], unit=Study.Unit.ITEM, items_per_system=1)


def test_gold_outputs_are_refused_in_a_dialogue_study(world, panel, users):
    with pytest.raises(StudyDesignError, match="gold outputs are single-turn"):
        make_dialogue_study(world, panel, users["admin"], gold=[GoldSpec(world.outputs[0], "good")])


def test_a_trapping_conversation_replaces_one_reply_with_the_instruction(world, panel, users):
    # when a dialogue study has two trapping conversations asking for a 4
    study = make_dialogue_study(
        world, panel, users["admin"], items_per_system=2, trap_count=2, trap_score=4, seed=5
    )

    # then each replays a sampled conversation, no system's, with exactly one reply replaced
    traps = list(study.stimuli.filter(kind=StudyStimulus.Kind.TRAP))
    rated = study.stimuli.filter(kind=StudyStimulus.Kind.RATED)
    assert len(traps) == 2 and rated.count() == 4
    sampled = set(rated.values_list("dialogue_id", flat=True))
    for trap in traps:
        assert trap.system_id is None and trap.dialogue_id in sampled
        replaced = [reply for reply in trap.turns.order_by("turn") if reply.expected]
        assert len(replaced) == 1
        (instruction,) = replaced
        assert instruction.output is None
        assert instruction.response_text == trap_sentence(4)
        assert instruction.expected == {dimension: [4, 4] for dimension in study.dimensions}
        assert wav_seconds(read_media(instruction.audio_key)) == pytest.approx(
            instruction.audio_seconds, abs=0.01
        )
        others = [reply for reply in trap.turns.all() if reply.pk != instruction.pk]
        assert others and all(reply.output is not None and not reply.expected for reply in others)
    # and every rater hears every trapping conversation among their own
    for evaluator in panel:
        heard = StudyAssignment.objects.filter(study=study, evaluator=evaluator)
        assert set(heard.filter(stimulus__kind="trap").values_list("stimulus", flat=True)) == {
            t.pk for t in traps
        }


def test_practice_conversations_come_first_and_from_outside_the_sample(world, panel, users):
    # given four dialogues, two of which are sampled per system
    study = make_dialogue_study(world, panel, users["admin"], items_per_system=2, training_count=2)

    practice = study.stimuli.filter(kind=StudyStimulus.Kind.TRAINING)
    sampled = set(study.stimuli.filter(kind="rated").values_list("dialogue_id", flat=True))
    assert practice.count() == 2
    assert not set(practice.values_list("dialogue_id", flat=True)) & sampled
    for evaluator in panel:
        order = StudyAssignment.objects.filter(study=study, evaluator=evaluator).order_by("position")
        assert [a.stimulus.kind for a in order[:2]] == ["training", "training"]
        assert "training" not in {a.stimulus.kind for a in order[2:]}


def test_more_traps_than_conversations_or_practice_than_exists_is_refused(world, panel, users):
    with pytest.raises(StudyDesignError, match="more trapping conversations than sampled"):
        make_dialogue_study(world, panel, users["admin"], items_per_system=1, trap_count=3)
    with pytest.raises(StudyDesignError, match="practice conversations were asked for"):
        make_dialogue_study(world, panel, users["admin"], items_per_system=2, training_count=99)


def _form(world, panel, **fields):
    data = {
        "name": "Dialogue form study",
        "title_for_raters": "Listening study",
        "instructions": "Listen to the conversation and rate every reply.",
        "systems": [system.pk for system in world.systems],
        "benchmark_version": "echoeval-v1",
        "unit": "dialogue",
        "dialogues_per_system": 2,
        "same_dialogues_for_all": "on",
        "items_per_system": 20,
        "ratings_per_output": 1,
        "dimensions": ["content_helpfulness", "naturalness", "prosody", "emotional_alignment"],
        "evaluators": [user.pk for user in panel],
        "training_count": 2,
        "trap_count": 1,
        "trap_score": 2,
        "allowed_check_failures": 0,
        "seed": 3,
    }
    data.update(fields)
    return data


def test_the_admin_designs_a_dialogue_study_through_the_form(world, panel, client_for):
    page = client_for("admin").get(reverse("evaluation:study_create")).content.decode()
    assert 'value="dialogue"' in page and "dialogues_per_system" in page

    response = client_for("admin").post(
        reverse("evaluation:study_create"), _form(world, panel, training_count=0, trap_count=0)
    )

    study = Study.objects.get(name="Dialogue form study")
    assert response.status_code == 302
    assert study.unit == Study.Unit.DIALOGUE and study.items_per_system == 2 and study.same_dialogues_for_all
    assert study.stimuli.count() == 4 and StudyTurn.objects.filter(stimulus__study=study).count() == 12
    assert study.assignments.count() == 4  # one rating per conversation, no training or traps


def test_the_form_adds_practice_and_trapping_conversations(world, panel, client_for):
    form = _form(world, panel, training_count=1, trap_count=1, trap_score=5, ratings_per_output=3)
    response = client_for("admin").post(reverse("evaluation:study_create"), form)

    assert response.status_code == 302
    study = Study.objects.get(name="Dialogue form study")
    kinds = Counter(study.stimuli.values_list("kind", flat=True))
    assert kinds == {"rated": 4, "training": 1, "trap": 1}
    (trap_turn,) = StudyTurn.objects.filter(stimulus__study=study).exclude(expected={})
    assert trap_turn.expected == {dimension: [5, 5] for dimension in study.dimensions}
    assert study.assignments.count() == 3 * (4 + 1 + 1)


def test_the_form_refuses_gold_in_a_dialogue_study(world, panel, client_for):
    form = _form(world, panel, gold_good=[world.outputs[0].pk])
    response = client_for("admin").post(reverse("evaluation:study_create"), form)
    assert response.status_code == 200 and "no gold outputs" in response.content.decode()
    assert not Study.objects.exists()


def test_a_dialogue_study_is_created_through_the_api(world, panel, users):
    api = Client(HTTP_AUTHORIZATION=f"Token {create_token(users['admin'], 'tests').secret}")
    design = {
        "name": "API dialogues",
        "systems": [system.pk for system in world.systems],
        "evaluators": [user.pk for user in panel],
        "unit": "dialogue",
        "dialogues_per_system": 2,
        "ratings_per_output": 1,
        "seed": 2,
    }
    created = api.post("/api/studies/", design, content_type="application/json")

    assert created.status_code == 201, created.content
    assert created.json()["unit"] == "dialogue"
    study = Study.objects.get(name="API dialogues")
    assert study.is_dialogue and study.stimuli.count() == 4  # no practice or trap unless asked

    # and a script asks for a trapping conversation by name
    design.update(name="API dialogues with a trap", trap_count=1, trap_score=3, ratings_per_output=3)
    created = api.post("/api/studies/", design, content_type="application/json")
    assert created.status_code == 201, created.content
    trapped = Study.objects.get(name="API dialogues with a trap")
    assert trapped.trap_score == 3
    assert (
        list(trapped.stimuli.filter(kind="trap").values_list("turns__expected", flat=True)).count(
            {dimension: [3, 3] for dimension in trapped.dimensions}
        )
        == 1
    )
