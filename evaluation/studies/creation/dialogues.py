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
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from annotation.recording.consent.models import RESEARCH_EVALUATION
from annotation.recording.models import Dialogue, Item, Take
from evaluation.outputs.models import ModelOutput
from evaluation.studies.creation.items import (
    NO_CLIP,
    FrozenAudio,
    StudySpec,
    TrapCheck,
    assign_in_plan_order,
    check_spec,
    new_study,
    pick_warm_up,
    record_study_takes,
    trap_check,
)
from evaluation.studies.design import (
    Stimulus,
    StimulusKind,
    StudyDesignError,
    dimensions_for,
    plan_study,
    sample_dialogues,
)
from evaluation.studies.models import Study, StudyStimulus, StudyTurn
from webapp.models import User
from webapp.storage import delete_media

# dialogue -> system -> turn -> the system's reply to that turn
Replies = dict[int, dict[int, dict[int, ModelOutput]]]


def create_dialogue_study(spec: StudySpec, created_by: User) -> Study:
    """Sample dialogues per system, freeze each turn's reply and plan every evaluator's order.

    `spec.items_per_system` is the number of dialogues per system. Quality checks work per
    conversation: `training_count` practice conversations come first and count for nothing, and
    each of `trap_count` trapping conversations replays a sampled one with one reply (a random
    turn) replaced by the instruction to choose `trap_score` (spoken; only shown in a silent,
    text-only conversation). Gold outputs are single-turn
    and refused. Raises StudyDesignError, with a message for the admin, when the study cannot be
    built.
    """
    dimensions = dimensions_for(spec.dimensions)
    check_spec(spec, dimensions)
    if spec.gold:
        raise StudyDesignError(
            "gold outputs are single-turn: a dialogue study checks raters with trapping conversations"
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

    units = [(int(system), int(key)) for system, keys in sample.items() for key in keys]
    if spec.trap_count > len(units):
        raise StudyDesignError("there cannot be more trapping conversations than sampled conversations")
    traps = [
        (unit, rng.choice(sorted(replies[unit[1]][unit[0]]))) for unit in rng.sample(units, spec.trap_count)
    ]
    warm_up = _pick_practice(replies, {dialogue for _, dialogue in units}, spec.training_count, rng)

    frozen = FrozenAudio()
    try:
        checks = [
            trap_check(spec.trap_score, dimensions, frozen, rates_content, _spoken(replies[dialogue][system]))
            for (system, dialogue), _ in traps
        ]
        # One transaction, as for single-turn studies: no rater starts on a half-built study.
        with transaction.atomic():
            study = new_study(
                spec,
                dimensions,
                seed,
                created_by,
                unit=Study.Unit.DIALOGUE,
                same_dialogues_for_all=spec.same_dialogues_for_all,
                trap_score=spec.trap_score,
            )

            def unit_stimulus(
                kind: str, system: int, dialogue: int, trap: TrapTurn | None = None
            ) -> StudyStimulus:
                return _dialogue_stimulus(
                    study, kind, system, first_turns[dialogue], replies[dialogue][system], frozen, trap
                )

            rated = [unit_stimulus(StudyStimulus.Kind.RATED, *unit) for unit in units]
            trapping = [
                unit_stimulus(StudyStimulus.Kind.TRAP, *unit, TrapTurn(turn, check))
                for (unit, turn), check in zip(traps, checks, strict=True)
            ]
            practice = [unit_stimulus(StudyStimulus.Kind.TRAINING, *unit) for unit in warm_up]
            stimuli = [*rated, *trapping, *practice]

            def planned(group: list[StudyStimulus], kind: StimulusKind) -> list[Stimulus]:
                return [Stimulus(key=str(s.pk), item=str(s.dialogue_id), kind=kind) for s in group]

            plan = plan_study(
                planned(rated, "rated"),
                [str(user.pk) for user in spec.evaluators],
                spec.ratings_per_output,
                quality_checks=planned(trapping, "trap"),
                training=planned(practice, "training"),
                seed=seed,
            )
            by_key = {str(stimulus.pk): stimulus for stimulus in stimuli}
            assign_in_plan_order(study, plan, by_key)
            record_study_takes(study.pk)
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
    # A dialogue one of whose turns its speaker withdrew is not played to raters at all.
    unrecorded.update(
        Item.objects.filter(
            dialogue__isnull=False, recording__in=Take.objects.refused_for(RESEARCH_EVALUATION).values("pk")
        ).values_list("dialogue_id", flat=True)
    )
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


@dataclass(frozen=True)
class TrapTurn:
    """Which reply of a trapping conversation is replaced, and by what."""

    turn: int
    check: TrapCheck


def _dialogue_stimulus(
    study: Study,
    kind: str,
    system_id: int,
    first_turn: Item,
    by_turn: Mapping[int, ModelOutput],
    frozen: FrozenAudio,
    trap: TrapTurn | None = None,
) -> StudyStimulus:
    stimulus = StudyStimulus.objects.create(
        study=study,
        kind=kind,
        # A trapping conversation is no system's: it is left out of every system's figures.
        system_id=None if trap else system_id,
        item=first_turn,
        dialogue_id=first_turn.dialogue_id,
    )
    spoken = _spoken(by_turn)
    turns = [
        _trap_turn(stimulus, by_turn[turn], trap.check)
        if trap is not None and turn == trap.turn
        else _frozen_turn(stimulus, turn, by_turn[turn], frozen, spoken)
        for turn in sorted(by_turn)
    ]
    StudyTurn.objects.bulk_create(turns)
    return stimulus


def _pick_practice(
    replies: Replies, sampled: set[int], count: int, rng: random.Random
) -> list[tuple[int, int]]:
    """Return (system, dialogue) practice conversations (`creation.pick_warm_up`)."""

    def units(dialogues: set[int]) -> list[tuple[int, int]]:
        return sorted(
            (system, dialogue)
            for dialogue in replies
            if dialogue in dialogues
            for system in replies[dialogue]
        )

    return pick_warm_up(units(set(replies) - sampled), units(sampled), count, rng, "practice conversations")


def _spoken(by_turn: Mapping[int, ModelOutput]) -> bool:
    """Return whether a conversation is heard: every reply keeps its audio, or none does (a
    text-only system in a content study), since the playback gate orders turns by their replies."""
    return all(output.response_audio_key for output in by_turn.values())


def _trap_turn(stimulus: StudyStimulus, replaced: ModelOutput, check: TrapCheck) -> StudyTurn:
    return StudyTurn(
        stimulus=stimulus,
        turn=replaced.item.turn or 0,
        item_id=replaced.item_id,
        output=None,
        response_text=check.text,
        audio_key=check.clip.key,
        original_audio_key=check.clip.original_key,
        audio_seconds=check.clip.seconds,
        expected=check.expected,
    )


def _frozen_turn(
    stimulus: StudyStimulus, turn: int, output: ModelOutput, frozen: FrozenAudio, spoken: bool
) -> StudyTurn:
    clip = frozen.copy(output.response_audio_key) if spoken else NO_CLIP
    return StudyTurn(
        stimulus=stimulus,
        turn=turn,
        item_id=output.item_id,
        output=output,
        response_text=output.response_text or output.raw_text,
        audio_key=clip.key,
        original_audio_key=clip.original_key,
        audio_seconds=clip.seconds,
    )
