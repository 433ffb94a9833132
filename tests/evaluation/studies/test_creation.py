"""Creating a study: stratified sample, balanced assignments, frozen stimuli, real trap speech."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from django.urls import reverse

from annotation.audio.synthesis import synthesize
from evaluation.studies.creation.items import GoldSpec, StudySpec, create_study
from evaluation.studies.design import StudyDesignError, trap_sentence
from evaluation.studies.models import StudyAssignment, StudyStimulus
from tests.evaluation.studies.support import REPLY_SPEECH, build_world, make_study, spoken, wav_seconds
from webapp.roles import Role
from webapp.storage import read_media


@pytest.fixture
def world(make_user):
    return build_world(make_user, n_systems=3, n_items=6)


@pytest.fixture
def panel(make_user):
    return [make_user(Role.EVALUATOR) for _ in range(4)]


def test_every_rated_output_gets_k_different_raters_with_even_loads(world, panel, users):
    study = make_study(world, panel, users["admin"], items_per_system=4, ratings_per_output=3)
    rated = StudyAssignment.objects.filter(study=study, stimulus__kind=StudyStimulus.Kind.RATED)
    per_stimulus = Counter(rated.values_list("stimulus_id", flat=True))
    # 3 systems x 4 items, each rated by 3 different evaluators (unique per stimulus and evaluator)
    assert len(per_stimulus) == 12 and set(per_stimulus.values()) == {3}
    # 36 ratings over 4 evaluators: 9 each
    assert set(Counter(rated.values_list("evaluator_id", flat=True)).values()) == {9}
    # every system answers the same sampled items
    items_by_system = {
        system.pk: set(study.stimuli.filter(kind="rated", system=system).values_list("item_id", flat=True))
        for system in world.systems
    }
    assert len({frozenset(items) for items in items_by_system.values()}) == 1


def test_each_evaluator_starts_with_training_and_never_hears_one_item_twice_in_a_row(world, panel, users):
    study = make_study(
        world, panel, users["admin"], items_per_system=4, ratings_per_output=3, training_count=2
    )
    for evaluator in panel:
        order = list(
            StudyAssignment.objects.filter(study=study, evaluator=evaluator)
            .order_by("position")
            .values_list("stimulus__kind", "stimulus__item_id")
        )
        kinds = [kind for kind, _ in order]
        assert kinds[:2] == ["training", "training"] and "training" not in kinds[2:]
        assert kinds.count("trap") == 1
        assert all(a[1] != b[1] for a, b in itertools.pairwise(order))


def test_training_comes_from_items_outside_the_sample(world, panel, users):
    study = make_study(world, panel, users["admin"], items_per_system=4, training_count=2)
    sampled = set(study.stimuli.filter(kind="rated").values_list("item_id", flat=True))
    training = set(study.stimuli.filter(kind="training").values_list("item_id", flat=True))
    assert training and not training & sampled


def test_stimuli_are_frozen_copies_under_fresh_keys(world, panel, users):
    study = make_study(world, panel, users["admin"])
    stimulus = study.stimuli.filter(kind="rated").select_related("output")[0]
    assert stimulus.output is not None
    assert stimulus.audio_key != stimulus.output.response_audio_key
    assert stimulus.audio_key.startswith("audio/stimulus/")
    # raters hear it levelled (tests/evaluation/studies/test_clip_levels.py); the copy at its own
    # level is the output's audio, byte for byte
    assert stimulus.original_audio_key.startswith("audio/stimulus/")
    assert read_media(stimulus.original_audio_key) == read_media(stimulus.output.response_audio_key)
    assert stimulus.response_text == stimulus.output.response_text
    assert stimulus.audio_seconds == pytest.approx(wav_seconds(spoken(REPLY_SPEECH)))
    assert 0.3 < stimulus.audio_seconds < 2.0


def test_trapping_items_speak_the_score_to_choose(world, panel, users):
    study = make_study(world, panel, users["admin"], trap_score=2)
    trap = study.stimuli.get(kind="trap")
    seconds = wav_seconds(read_media(trap.audio_key))
    # the same sentence spoken again lasts as long (eSpeak varies by a few milliseconds)
    assert seconds == pytest.approx(synthesize(trap_sentence(2)).duration_seconds, abs=0.05)
    assert seconds > 2.0
    assert trap.audio_seconds == pytest.approx(seconds)
    assert trap.expected == {key: [2, 2] for key in study.dimensions}
    assert trap.system is None and trap.audio_key.startswith("audio/stimulus/")


def test_gold_outputs_carry_their_known_answer_and_leave_the_sample(world, panel, users):
    good = world.outputs[0]
    study = make_study(world, panel, users["admin"], gold=[GoldSpec(good, "good")])
    gold = study.stimuli.get(kind="gold")
    assert gold.expected == {"content_helpfulness": [4, 5]}
    assert not study.stimuli.filter(kind="rated", item=good.item).exists()
    audio_only = make_study(
        world, panel, users["admin"], dimensions=["naturalness", "prosody"], gold=[GoldSpec(good, "harmful")]
    )
    assert audio_only.stimuli.get(kind="gold").expected == {"naturalness": [1, 2], "prosody": [1, 2]}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"instructions": "Compare secretsystema with the rest."}, "name SecretSystemA"),
        ({"ratings_per_output": 5}, "at least 5 evaluators; 4 invited"),
        ({"items_per_system": 7}, "only 6 items have a usable answer"),
        ({"trap_score": 6}, "between 1 and 5"),
    ],
)
def test_a_study_that_cannot_be_run_fairly_is_refused(world, panel, users, overrides, message):
    with pytest.raises(StudyDesignError, match=message):
        make_study(world, panel, users["admin"], **overrides)


def test_only_evaluators_can_be_invited(world, users):
    spec = StudySpec(
        name="x", instructions="y", systems=world.systems, evaluators=[users["reviewer"]], items_per_system=1
    )
    with pytest.raises(StudyDesignError, match="not evaluators: reviewer"):
        create_study(spec, created_by=users["admin"])


def study_form(world, **fields):
    """Return the study form's fields: three ratings of three items per system, the rest given."""
    return {
        "title_for_raters": "Listening study",
        "instructions": "Rate it.",
        "systems": [system.pk for system in world.systems],
        "benchmark_version": "echoeval-v1",
        "items_per_system": 3,
        "ratings_per_output": 3,
        "trap_score": 2,
        "allowed_check_failures": 0,
        **fields,
    }


def test_the_admin_designs_a_study_through_the_form(world, panel, client_for):
    form = study_form(
        world,
        name="Form study",
        dimensions=["content_helpfulness", "naturalness"],
        evaluators=[user.pk for user in panel],
        training_count=1,
        trap_count=1,
        gold_good=[world.outputs[-1].pk],
    )
    response = client_for("admin").post(reverse("evaluation:study_create"), form)
    study = world.systems[0].studies.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "evaluation:study_results", args=[study.pk]
    )
    assert study.dimensions == ["content_helpfulness", "naturalness"]
    assert Counter(study.stimuli.values_list("kind", flat=True)) == {
        "rated": 9,
        "gold": 1,
        "trap": 1,
        "training": 1,
    }


def test_the_form_shows_why_a_study_was_refused(world, panel, client_for):
    form = study_form(
        world,
        name="Too big",
        dimensions=["naturalness"],
        evaluators=[panel[0].pk],
        training_count=0,
        trap_count=0,
    )
    response = client_for("admin").post(reverse("evaluation:study_create"), form)
    assert response.status_code == 200
    assert "at least 3 evaluators; 1 invited" in response.content.decode()
