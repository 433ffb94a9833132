"""Creating a dialogue study: (system, dialogue) stimuli with every turn's reply frozen, by spec and by form."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.models import Item
from evaluation.studies.design import StudyDesignError
from evaluation.studies.models import Study, StudyAssignment, StudyStimulus, StudyTurn
from tests.evaluation.studies.dialogues.support import build_dialogue_world, make_dialogue_study
from tests.evaluation.studies.support import REPLY_SPEECH, spoken, wav_seconds
from webapp.api.tokens import create_token
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
    world.outputs[0].delete()  # SecretSystemA's reply to DLG-000 turn 1
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


def test_gold_traps_and_training_are_refused_in_a_dialogue_study(world, panel, users):
    with pytest.raises(StudyDesignError, match="no gold, trapping or training"):
        make_dialogue_study(world, panel, users["admin"], trap_count=1)


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

    response = client_for("admin").post(reverse("evaluation:study_create"), _form(world, panel))

    study = Study.objects.get(name="Dialogue form study")
    assert response.status_code == 302
    assert study.unit == Study.Unit.DIALOGUE and study.items_per_system == 2 and study.same_dialogues_for_all
    assert study.stimuli.count() == 4 and StudyTurn.objects.filter(stimulus__study=study).count() == 12
    assert study.assignments.count() == 4  # one rating per conversation, no training or traps


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
    assert study.is_dialogue and study.stimuli.count() == 4
