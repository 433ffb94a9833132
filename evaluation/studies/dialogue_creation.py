"""Creating a dialogue study: sample dialogues per system, freeze every assistant turn's reply and
plan every evaluator's order. The stimulus is (system, dialogue); its turns are `StudyTurn`s.

The design rules are those of single-turn studies (`evaluation.studies.design`): dialogues are
sampled stratified by topic (`sample_dialogues`), every conversation is rated by
`ratings_per_output` different evaluators with even loads, and one dialogue never follows itself
in a rater's order (two systems' versions of one conversation are not heard back to back).
Replies are frozen as single-turn stimuli are: text copied, audio re-encoded clean under a
random key (`creation.FrozenAudio`), so nothing a rater receives names the system.
"""

from __future__ import annotations

import random
import secrets
from collections import defaultdict
from collections.abc import Mapping

from django.db import transaction
from django.db.models import Q

from annotation.recording.models import Dialogue, Item
from evaluation.outputs.models import ModelOutput
from evaluation.studies.creation import FrozenAudio, StudySpec, assign_in_plan_order, check_spec, new_study
from evaluation.studies.design import Stimulus, StudyDesignError, dimensions_for, plan_study, sample_dialogues
from evaluation.studies.models import Study, StudyStimulus, StudyTurn
from webapp.models import User
from webapp.storage import delete_media

# dialogue -> system -> turn -> the system's reply to that turn
Replies = dict[int, dict[int, dict[int, ModelOutput]]]


def create_dialogue_study(spec: StudySpec, created_by: User) -> Study:
    """Sample dialogues per system, freeze each turn's reply and plan every evaluator's order.

    `spec.items_per_system` is the number of dialogues per system. Gold, trapping and training
    samples are single-turn devices and are refused here. Raises StudyDesignError, with a message
    for the admin, when the study cannot be built.
    """
    dimensions = dimensions_for(spec.dimensions)
    check_spec(spec, dimensions)
    if spec.gold or spec.training_count or spec.trap_count:
        raise StudyDesignError(
            "dialogue studies have no gold, trapping or training samples: set their numbers to 0"
        )
    seed = spec.seed if spec.seed is not None else secrets.randbits(31)
    rng = random.Random(seed)
    rates_audio = any(dimension.modality == "audio" for dimension in dimensions)
    rates_content = any(dimension.modality == "content" for dimension in dimensions)
    replies = complete_dialogues(spec, rates_audio, rates_content)
    dialogues = Dialogue.objects.in_bulk(list(replies))
    strata: dict[str, list[str]] = defaultdict(list)
    for dialogue_id in replies:
        strata[dialogues[dialogue_id].topic or "(no topic)"].append(str(dialogue_id))
    sample = sample_dialogues(
        strata,
        [str(system.pk) for system in spec.systems],
        spec.items_per_system,
        rng,
        same_for_all=spec.same_dialogues_for_all,
    )
    first_turns = {
        item.dialogue_id: item for item in Item.objects.filter(dialogue_id__in=list(replies), turn=1)
    }

    frozen = FrozenAudio()
    try:
        # One transaction, as for single-turn studies: no rater starts on a half-built study.
        with transaction.atomic():
            study = new_study(
                spec,
                dimensions,
                seed,
                created_by,
                unit=Study.Unit.DIALOGUE,
                same_dialogues_for_all=spec.same_dialogues_for_all,
            )
            stimuli = [
                _dialogue_stimulus(
                    study, int(system), first_turns[int(key)], replies[int(key)][int(system)], frozen
                )
                for system, keys in sample.items()
                for key in keys
            ]
            plan = plan_study(
                [Stimulus(key=str(s.pk), item=str(s.dialogue_id), kind="rated") for s in stimuli],
                [str(user.pk) for user in spec.evaluators],
                spec.ratings_per_output,
                seed=seed,
            )
            by_key = {str(stimulus.pk): stimulus for stimulus in stimuli}
            assign_in_plan_order(study, plan, by_key)
    except BaseException:
        delete_media(*frozen.keys)
        raise
    return study


def complete_dialogues(spec: StudySpec, rates_audio: bool, rates_content: bool) -> Replies:
    """Return the dialogues every chosen system answered on every turn, in a way a rater can judge
    on every chosen dimension, and whose user turns all have an accepted recording."""
    turns: dict[int, set[int]] = defaultdict(set)
    unrecorded: set[int] = set()
    for dialogue_id, turn, recording_id in Item.objects.filter(dialogue__isnull=False).values_list(
        "dialogue_id", "turn", "recording_id"
    ):
        turns[dialogue_id].add(turn or 0)
        if recording_id is None:
            unrecorded.add(dialogue_id)
    outputs = ModelOutput.objects.for_version(spec.benchmark_version).filter(
        system__in=spec.systems, item__dialogue__isnull=False
    )
    if rates_audio:
        outputs = outputs.exclude(response_audio_key="")
    if rates_content:
        outputs = outputs.exclude(Q(response_text="") & Q(raw_text=""))
    replies: Replies = defaultdict(lambda: defaultdict(dict))
    for output in outputs.select_related("item"):
        replies[output.item.dialogue_id or 0][output.system_id][output.item.turn or 0] = output
    wanted = {system.pk for system in spec.systems}
    return {
        dialogue_id: {system: dict(by_turn) for system, by_turn in by_system.items()}
        for dialogue_id, by_system in replies.items()
        if dialogue_id not in unrecorded
        and set(by_system) == wanted
        and all(set(by_turn) == turns[dialogue_id] for by_turn in by_system.values())
    }


def _dialogue_stimulus(
    study: Study, system_id: int, first_turn: Item, by_turn: Mapping[int, ModelOutput], frozen: FrozenAudio
) -> StudyStimulus:
    stimulus = StudyStimulus.objects.create(
        study=study,
        kind=StudyStimulus.Kind.RATED,
        system_id=system_id,
        item=first_turn,
        dialogue_id=first_turn.dialogue_id,
    )
    # Every reply keeps its audio, or none does (a text-only system in a content study): the
    # playback gate orders turns by their replies, which needs all or none of them audible.
    spoken = all(output.response_audio_key for output in by_turn.values())
    StudyTurn.objects.bulk_create(
        _frozen_turn(stimulus, turn, by_turn[turn], frozen, spoken) for turn in sorted(by_turn)
    )
    return stimulus


def _frozen_turn(
    stimulus: StudyStimulus, turn: int, output: ModelOutput, frozen: FrozenAudio, spoken: bool
) -> StudyTurn:
    key, seconds = frozen.copy(output.response_audio_key) if spoken else ("", 0.0)
    return StudyTurn(
        stimulus=stimulus,
        turn=turn,
        item_id=output.item_id,
        output=output,
        response_text=output.response_text or output.raw_text,
        audio_key=key,
        audio_seconds=seconds,
    )
