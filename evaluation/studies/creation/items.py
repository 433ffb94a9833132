"""Creating a listening study: sample items, freeze stimuli (copying audio, synthesising traps) and
plan every evaluator's presentation order. The design rules live in `evaluation.studies.design`.

What is rated is a `Sample` (`evaluation.studies.samples`): by default the systems' benchmark
outputs; another workflow may hand in its own (EchoMind's spoken replies to deliveries).

Every clip raters hear is loudness-normalised to one level, as P.808 asks (STUDY_LEVEL_LUFS, -26
LUFS: `annotation.audio.speech.loudness.normalised`, never above -1 dBTP), so a louder system is
not heard as a better one; the clip at its own level is kept beside it for admins (the study's
clips page). Normalising is gain arithmetic on BS.1770 loudness, no model: it runs as the clip is
frozen, in the creating request like the rest of the freezing (ffmpeg's re-encoding, eSpeak's
traps), so no rater can reach a study before its clips are levelled. pyloudnorm and scipy load
then, never when the web app starts (tests/webapp/test_import_weight.py)."""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar, cast

from django.db import transaction
from django.db.models import Q

from annotation.audio.clean import clean_audio
from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.audio.upload import AudioRejected
from annotation.recording.consent.models import TakeUse, record_uses
from annotation.recording.models import Item
from evaluation.outputs.access import systems_named_in
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, ModelOutput, System
from evaluation.studies.design import (
    DEFAULT_RATINGS_PER_OUTPUT,
    DIMENSIONS,
    Dimension,
    Stimulus,
    StimulusKind,
    StudyDesignError,
    dimensions_for,
    plan_study,
    sample_stratified,
    trap_sentence,
)
from evaluation.studies.models import Study, StudyAssignment, StudyRater, StudyStimulus, StudyTurn
from evaluation.studies.samples import Sample, Samples, output_sample, usable_outputs
from webapp.models import User
from webapp.roles import Role, has_role
from webapp.storage import delete_media, new_media_key, read_media, save_media

T = TypeVar("T")

GoldVerdict = Literal["good", "harmful"]
# What a gold output's raters must answer: an obviously good response scores 4-5, a harmful one 1-2.
GOLD_RANGES: dict[GoldVerdict, tuple[int, int]] = {"good": (4, 5), "harmful": (1, 2)}


@dataclass(frozen=True)
class GoldSpec:
    output: ModelOutput
    verdict: GoldVerdict


@dataclass(frozen=True)
class StudySpec:
    name: str
    instructions: str
    systems: Sequence[System]
    evaluators: Sequence[User]
    items_per_system: int
    ratings_per_output: int = DEFAULT_RATINGS_PER_OUTPUT
    dimensions: Sequence[str] = tuple(DIMENSIONS)
    title_for_raters: str = "Listening study"
    benchmark_version: str = DEFAULT_BENCHMARK_VERSION
    training_count: int = 2
    trap_count: int = 1
    trap_score: int = 2
    gold: Sequence[GoldSpec] = field(default=())
    allowed_check_failures: int = 0
    seed: int | None = None
    unit: str = "item"  # Study.Unit: "dialogue" rates every assistant turn of sampled dialogues
    same_dialogues_for_all: bool = True  # dialogue studies: see design.sample_dialogues
    kind: str = "acr"  # Study.Kind: "ccr", "dcr", "ab" and "mushra" are built by creation.comparisons
    reference_system: System | None = None  # CCR: compared with (None: every pair); DCR, MUSHRA: required
    anchors: Sequence[str] = ()  # MUSHRA: "low" (3.5 kHz) and optionally "mid" (7 kHz)


@dataclass(frozen=True)
class FrozenClip:
    key: str  # what raters hear: the clean re-encoding at the study's level
    original_key: str  # the same clean re-encoding at its own level, for admins
    seconds: float


NO_CLIP = FrozenClip("", "", 0.0)  # nothing heard: a text-only reply, or a trap only shown


@dataclass
class FrozenAudio:
    """Audio copied for a study, remembered so a failed creation can delete it again."""

    keys: list[str] = field(default_factory=list)

    def copy(self, key: str) -> FrozenClip:
        """Store a clean re-encoding of the audio under new random keys, levelled and as it was:
        whatever the stored file carries besides sound (tags of outputs imported before imports
        cleaned them) stays behind."""
        try:
            clean = clean_audio(read_media(key), "a response's audio")
        except AudioRejected as rejected:
            raise StudyDesignError(f"a response's audio cannot be read: {rejected.reason}") from None
        return self.store_wav(clean.wav_bytes, clean.duration_seconds)

    def store_wav(self, data: bytes, seconds: float) -> FrozenClip:
        """Store 16-bit PCM WAV bytes as a clip at the study's level, and as they are."""
        from annotation.audio.speech.loudness import normalised_wav  # see the module docstring

        original = save_media(new_media_key("stimulus", "wav"), data)
        self.keys.append(original)
        levelled = save_media(new_media_key("stimulus", "wav"), normalised_wav(data))
        self.keys.append(levelled)
        return FrozenClip(levelled, original, seconds)


def create_study(spec: StudySpec, created_by: User, samples: Samples | None = None) -> Study:
    """Sample items, freeze stimuli (copying audio, synthesising traps) and plan every evaluator's order.

    `samples` are what may be rated (every one playable on the spec's dimensions); by default the
    chosen systems' benchmark outputs. Raises StudyDesignError, with a message for the admin, when
    the study cannot be built. A dialogue study (`spec.unit == "dialogue"`) is built by
    `creation.dialogues.create_dialogue_study`.
    """
    if spec.kind != Study.Kind.ACR:
        # Imported here: creation.comparisons builds on this module's checks and audio freezing.
        from evaluation.studies.creation.comparisons import create_comparison_study

        return create_comparison_study(spec, created_by)
    if spec.unit == Study.Unit.DIALOGUE:
        # Imported here: creation.dialogues builds on this module's checks and audio freezing.
        from evaluation.studies.creation.dialogues import create_dialogue_study

        return create_dialogue_study(spec, created_by)
    dimensions = dimensions_for(spec.dimensions)
    check_spec(spec, dimensions)
    seed = spec.seed if spec.seed is not None else secrets.randbits(31)
    rng = random.Random(seed)
    rates_audio = any(dimension.modality == "audio" for dimension in dimensions)
    rates_content = any(dimension.modality == "content" for dimension in dimensions)
    answers = (
        samples
        if samples is not None
        else usable_outputs(
            spec.systems, spec.benchmark_version, rates_audio=rates_audio, rates_content=rates_content
        )
    )

    gold_items = {gold.output.item_id for gold in spec.gold}
    complete = {
        item_id: by_system
        for item_id, by_system in answers.items()
        if len(by_system) == len(spec.systems) and item_id not in gold_items
    }
    strata: dict[str, list[str]] = {}
    for item_id, by_system in complete.items():
        strata.setdefault(next(iter(by_system.values())).stratum, []).append(str(item_id))
    if spec.items_per_system > len(complete):
        raise StudyDesignError(
            f"{spec.items_per_system} items per system were asked for, but only {len(complete)} items have "
            "a usable answer from every chosen system"
        )
    chosen = [int(key) for key in sample_stratified(strata, spec.items_per_system, rng)]
    training = _pick_training(answers, chosen, gold_items, spec.training_count, rng)
    if spec.trap_count > len(chosen):
        raise StudyDesignError("there cannot be more trapping items than sampled items")
    trap_items = rng.sample(chosen, spec.trap_count)

    frozen = FrozenAudio()
    try:
        trap_checks = [trap_check(spec.trap_score, dimensions, frozen, rates_content) for _ in trap_items]
        # One transaction: a rater invited to a half-built study (seats but not yet every
        # assignment) would start on a presentation order that later rows change under them.
        with transaction.atomic():
            study = new_study(spec, dimensions, seed, created_by, trap_score=spec.trap_score)
            rated = [
                _sample_stimulus(study, StudyStimulus.Kind.RATED, sample, {}, frozen, rates_audio)
                for item_id in chosen
                for sample in complete[item_id].values()
            ]
            gold = [
                _sample_stimulus(
                    study,
                    StudyStimulus.Kind.GOLD,
                    output_sample(entry.output),
                    gold_expectation(entry.verdict, dimensions),
                    frozen,
                    rates_audio,
                )
                for entry in spec.gold
            ]
            warm_up = [
                _sample_stimulus(study, StudyStimulus.Kind.TRAINING, sample, {}, frozen, rates_audio)
                for sample in training
            ]
            traps = [
                StudyStimulus.objects.create(
                    study=study,
                    kind=StudyStimulus.Kind.TRAP,
                    item_id=item_id,
                    response_text=check.text,
                    audio_key=check.clip.key,
                    original_audio_key=check.clip.original_key,
                    audio_seconds=check.clip.seconds,
                    expected=check.expected,
                )
                for item_id, check in zip(trap_items, trap_checks, strict=True)
            ]
            plan = plan_study(
                [_plain(stimulus) for stimulus in rated],
                [str(user.pk) for user in spec.evaluators],
                spec.ratings_per_output,
                quality_checks=[_plain(stimulus) for stimulus in (*gold, *traps)],
                training=[_plain(stimulus) for stimulus in warm_up],
                seed=seed,
            )
            by_key = {str(stimulus.pk): stimulus for stimulus in (*rated, *gold, *traps, *warm_up)}
            assign_in_plan_order(study, plan, by_key)
            record_study_takes(study.pk)
    except BaseException:
        delete_media(*frozen.keys)
        raise
    return study


def record_study_takes(study_id: int) -> int:
    """Record, for lineage, the takes a new study plays: its stimuli's queries and every user turn
    of its dialogues (as their items' recordings stand now, when it is made)."""
    stimulus_items = StudyStimulus.objects.filter(study_id=study_id).values("item_id")
    turn_items = StudyTurn.objects.filter(stimulus__study_id=study_id).values("item_id")
    takes = Item.objects.filter(Q(pk__in=stimulus_items) | Q(pk__in=turn_items)).values_list(
        "recording_id", flat=True
    )
    return record_uses(TakeUse.STUDY, study_id, takes)


def new_study(
    spec: StudySpec,
    dimensions: Sequence[Dimension],
    seed: int,
    created_by: User,
    **unit_fields: object,
) -> Study:
    """Create a study's row with its systems and rater seats; `unit_fields` are what only one kind
    of study sets (the dialogue unit, the trap score). Call it inside the creating transaction."""
    study = Study.objects.create(
        name=spec.name,
        title_for_raters=spec.title_for_raters,
        instructions=spec.instructions,
        dimensions=[dimension.key for dimension in dimensions],
        benchmark_version=spec.benchmark_version,
        items_per_system=spec.items_per_system,
        ratings_per_output=spec.ratings_per_output,
        seed=seed,
        allowed_check_failures=spec.allowed_check_failures,
        created_by=created_by,
        **unit_fields,
    )
    study.systems.set(spec.systems)
    StudyRater.objects.bulk_create(StudyRater(study=study, evaluator=user) for user in spec.evaluators)
    return study


def assign_in_plan_order(
    study: Study, plan: Mapping[str, Sequence[Stimulus]], by_key: Mapping[str, StudyStimulus]
) -> None:
    """Store each rater's queue as the plan ordered it (`design.plan_study`: evaluator -> stimuli)."""
    StudyAssignment.objects.bulk_create(
        StudyAssignment(
            study=study, evaluator_id=int(evaluator), stimulus=by_key[entry.key], position=position
        )
        for evaluator, order in plan.items()
        for position, entry in enumerate(order)
    )


def gold_expectation(verdict: GoldVerdict, dimensions: Sequence[Dimension]) -> dict[str, list[int]]:
    """Return what raters must answer for a gold output: on content when rated, else on audio."""
    judged = [dimension for dimension in dimensions if dimension.modality == "content"] or list(dimensions)
    low, high = GOLD_RANGES[verdict]
    return {dimension.key: [low, high] for dimension in judged}


def check_spec(spec: StudySpec, dimensions: Sequence[Dimension]) -> None:
    if not spec.name.strip():
        raise StudyDesignError("give the study a name")
    if not spec.systems:
        raise StudyDesignError("choose at least one system")
    if not dimensions:
        raise StudyDesignError("choose at least one rating dimension")
    if spec.items_per_system < 1:
        raise StudyDesignError("sample at least one item per system")
    if not 1 <= spec.trap_score <= 5:
        raise StudyDesignError("the trapping items' score must be between 1 and 5")
    not_evaluators = [user.username for user in spec.evaluators if not has_role(user, Role.EVALUATOR)]
    if not_evaluators:
        raise StudyDesignError(f"not evaluators: {', '.join(not_evaluators)}")
    if any(dimension.modality == "audio" for dimension in dimensions):
        silent = [system.name for system in spec.systems if system.text_only]
        if silent:
            raise StudyDesignError(
                f"{', '.join(silent)} produce no audio; rate content only or leave them out"
            )
    unplayable = [gold.output.item.external_id for gold in spec.gold if gold.output.item.recording_id is None]
    if unplayable:
        raise StudyDesignError(
            f"gold outputs answer items without an accepted recording: {', '.join(unplayable)}"
        )
    shown = f"{spec.title_for_raters}\n{spec.instructions}"
    named = systems_named_in(shown, spec.systems)
    if named:
        raise StudyDesignError(
            f"the title or instructions name {', '.join(named)}: raters must not learn which systems are compared"
        )


def _pick_training(
    answers: Samples, chosen: Sequence[int], gold_items: set[int], count: int, rng: random.Random
) -> list[Sample]:
    """Return training samples, from items outside the sample and gold when there are enough."""
    taken = set(chosen) | gold_items
    elsewhere = [
        sample for item, by_system in answers.items() if item not in taken for sample in by_system.values()
    ]
    sampled = [sample for item in chosen for sample in answers[item].values()]
    return pick_warm_up(
        sorted(elsewhere, key=lambda sample: sample.order), sampled, count, rng, "training samples"
    )


@dataclass(frozen=True)
class TrapCheck:
    """A trapping item: the spoken instruction to choose one score, and that score expected on
    every rated dimension (its words shown too when content is rated)."""

    clip: FrozenClip  # no keys and 0 s when only shown
    text: str
    expected: dict[str, list[int]]


def trap_check(
    score: int, dimensions: Sequence[Dimension], frozen: FrozenAudio, rates_content: bool, spoken: bool = True
) -> TrapCheck:
    """Return a trapping item asking for `score`, its audio synthesised and frozen; without
    `spoken` (a silent conversation) it is only shown: a lone audible reply would give it away."""
    text = trap_sentence(score)
    clip = NO_CLIP
    if spoken:
        speech = synthesize(text)
        clip = frozen.store_wav(to_wav_bytes(speech.samples, speech.sample_rate), speech.duration_seconds)
    return TrapCheck(
        clip=clip,
        text=text if rates_content else "",
        expected={dimension.key: [score, score] for dimension in dimensions},
    )


def pick_warm_up(
    outside: Sequence[T], inside: Sequence[T], count: int, rng: random.Random, what: str
) -> list[T]:
    """Return `count` training samples, from `outside` the rated sample when there are enough of
    them, else all of those and the rest drawn from `inside`: training on something that comes
    back later would let a rater anchor on its first answer."""
    if len(outside) >= count:
        return rng.sample(list(outside), count)
    if len(outside) + len(inside) < count:
        raise StudyDesignError(f"{count} {what} were asked for but only {len(outside) + len(inside)} exist")
    return [*outside, *rng.sample(list(inside), count - len(outside))]


def _sample_stimulus(
    study: Study,
    kind: str,
    sample: Sample,
    expected: Mapping[str, list[int]],
    frozen: FrozenAudio,
    rates_audio: bool,
) -> StudyStimulus:
    clip = frozen.copy(sample.audio_key) if sample.audio_key else NO_CLIP
    if rates_audio and not clip.key:
        raise StudyDesignError("every output in an audio study needs response audio")
    return StudyStimulus.objects.create(
        study=study,
        kind=kind,
        output=sample.output,
        system_id=sample.system_id,
        item_id=sample.item.pk,
        response_text=sample.text,
        audio_key=clip.key,
        original_audio_key=clip.original_key,
        audio_seconds=clip.seconds,
        expected=dict(expected),
    )


def _plain(stimulus: StudyStimulus) -> Stimulus:
    return Stimulus(key=str(stimulus.pk), item=str(stimulus.item_id), kind=cast(StimulusKind, stimulus.kind))
