"""Workflows of human listening studies: create one, present, play and rate stimuli, screen, decide.

Each function with side effects is one workflow, run in a transaction. The design rules (who
rates what, in which order) live in `evaluation.studies.design`; the figures in
`evaluation.studies.results`. This module moves rows between them.
"""

from __future__ import annotations

import hashlib
import io
import random
import re
import secrets
import wave
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, cast

from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.audio.upload import (
    ORIGINAL_EXTENSIONS,
    AudioRejected,
    UploadLimits,
    detect_container,
    normalise_upload,
)
from evaluation.outputs.models import ModelOutput, System
from evaluation.studies.design import (
    DEFAULT_RATINGS_PER_OUTPUT,
    DIMENSIONS,
    SCORES,
    Dimension,
    Stimulus,
    StimulusKind,
    StudyDesignError,
    dimensions_for,
    plan_study,
    sample_stratified,
    trap_sentence,
)
from evaluation.studies.models import Study, StudyAssignment, StudyRater, StudyRating, StudyStimulus
from evaluation.studies.results import (
    RaterReport,
    RatingRow,
    ScreeningRules,
    StudySummary,
    screen_study_raters,
    summarise_ratings,
)
from webapp.models import User
from webapp.roles import Role, has_role
from webapp.storage import delete_media, new_media_key, read_media, save_media

GoldVerdict = Literal["good", "harmful"]
# What a gold output's raters must answer: an obviously good response scores 4-5, a harmful one 1-2.
GOLD_RANGES: dict[GoldVerdict, tuple[int, int]] = {"good": (4, 5), "harmful": (1, 2)}
# Playback is accepted this long before the audio's length has passed since the page was shown:
# the clocks of browser and server, and the decoder's idea of the length, differ by a little.
PLAYBACK_SLACK_SECONDS = 0.25
FIGURES_CACHE_SECONDS = 600
# Only the length of a response is read here, so no upload rule (silence, clipping) applies.
_ANY_AUDIO = UploadLimits(
    max_bytes=200 * 1024 * 1024,
    min_seconds=0.0,
    max_seconds=3600.0,
    silence_peak_dbfs=-1000.0,
    max_clipping_ratio=1.0,
)


class RatingRefused(Exception):
    """A rating or playback report that cannot be accepted; the message is for the evaluator."""


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
    benchmark_version: str = "echoeval-v1"
    training_count: int = 2
    trap_count: int = 1
    trap_score: int = 2
    gold: Sequence[GoldSpec] = field(default=())
    allowed_check_failures: int = 0
    seed: int | None = None


@dataclass
class _Frozen:
    """Audio copied for a study, remembered so a failed creation can delete it again."""

    keys: list[str] = field(default_factory=list)

    def copy(self, key: str) -> tuple[str, float]:
        data = read_media(key)
        container = detect_container(data)
        if container is None:
            raise StudyDesignError("a response's audio is in a format browsers cannot play")
        new_key = save_media(new_media_key("stimulus", ORIGINAL_EXTENSIONS[container]), data)
        self.keys.append(new_key)
        return new_key, audio_seconds(data)

    def store_wav(self, data: bytes) -> str:
        new_key = save_media(new_media_key("stimulus", "wav"), data)
        self.keys.append(new_key)
        return new_key


def audio_seconds(data: bytes) -> float:
    """Return the length of encoded audio in seconds (WAV from its header, others by decoding)."""
    if detect_container(data) == "wav":
        try:
            with wave.open(io.BytesIO(data)) as wav:
                return wav.getnframes() / wav.getframerate()
        except (wave.Error, EOFError):
            pass  # an unusual WAV flavour: let ffmpeg measure it
    try:
        return normalise_upload(data, "response", limits=_ANY_AUDIO).duration_seconds
    except AudioRejected as rejected:
        raise StudyDesignError(f"a response's audio cannot be read: {rejected.reason}") from None


# --- Creating a study ---------------------------------------------------------------------------


def create_study(spec: StudySpec, created_by: User) -> Study:
    """Sample items, freeze stimuli (copying audio, synthesising traps) and plan every evaluator's order.

    Raises StudyDesignError, with a message for the admin, when the study cannot be built.
    """
    dimensions = dimensions_for(spec.dimensions)
    _check_spec(spec, dimensions)
    seed = spec.seed if spec.seed is not None else secrets.randbits(31)
    rng = random.Random(seed)
    rates_audio = any(dimension.modality == "audio" for dimension in dimensions)
    rates_content = any(dimension.modality == "content" for dimension in dimensions)
    answers = _usable_outputs(spec, rates_audio, rates_content)

    gold_items = {gold.output.item_id for gold in spec.gold}
    complete = {
        item_id: by_system
        for item_id, by_system in answers.items()
        if len(by_system) == len(spec.systems) and item_id not in gold_items
    }
    strata: dict[str, list[str]] = {}
    for by_system in complete.values():
        item = next(iter(by_system.values())).item
        strata.setdefault(item.scenario, []).append(str(item.pk))
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

    frozen = _Frozen()
    try:
        trap_audio = [_synthesise_trap(spec.trap_score, frozen) for _ in trap_items]
        with transaction.atomic():
            study = Study.objects.create(
                name=spec.name,
                title_for_raters=spec.title_for_raters,
                instructions=spec.instructions,
                dimensions=[dimension.key for dimension in dimensions],
                benchmark_version=spec.benchmark_version,
                items_per_system=spec.items_per_system,
                ratings_per_output=spec.ratings_per_output,
                seed=seed,
                trap_score=spec.trap_score,
                allowed_check_failures=spec.allowed_check_failures,
                created_by=created_by,
            )
            study.systems.set(spec.systems)
            StudyRater.objects.bulk_create(
                StudyRater(study=study, evaluator=user) for user in spec.evaluators
            )
            rated = [
                _output_stimulus(study, StudyStimulus.Kind.RATED, output, {}, frozen, rates_audio)
                for item_id in chosen
                for output in complete[item_id].values()
            ]
            gold = [
                _output_stimulus(
                    study,
                    StudyStimulus.Kind.GOLD,
                    entry.output,
                    gold_expectation(entry.verdict, dimensions),
                    frozen,
                    rates_audio,
                )
                for entry in spec.gold
            ]
            warm_up = [
                _output_stimulus(study, StudyStimulus.Kind.TRAINING, output, {}, frozen, rates_audio)
                for output in training
            ]
            every_dimension = {dimension.key: [spec.trap_score, spec.trap_score] for dimension in dimensions}
            traps = [
                StudyStimulus.objects.create(
                    study=study,
                    kind=StudyStimulus.Kind.TRAP,
                    item_id=item_id,
                    response_text=trap_sentence(spec.trap_score) if rates_content else "",
                    audio_key=key,
                    audio_seconds=seconds,
                    expected=every_dimension,
                )
                for item_id, (key, seconds) in zip(trap_items, trap_audio, strict=True)
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
            StudyAssignment.objects.bulk_create(
                StudyAssignment(
                    study=study, evaluator_id=int(evaluator), stimulus=by_key[entry.key], position=position
                )
                for evaluator, order in plan.items()
                for position, entry in enumerate(order)
            )
    except BaseException:
        delete_media(*frozen.keys)
        raise
    return study


def gold_expectation(verdict: GoldVerdict, dimensions: Sequence[Dimension]) -> dict[str, list[int]]:
    """Return what raters must answer for a gold output: on content when rated, else on audio."""
    judged = [dimension for dimension in dimensions if dimension.modality == "content"] or list(dimensions)
    low, high = GOLD_RANGES[verdict]
    return {dimension.key: [low, high] for dimension in judged}


def _check_spec(spec: StudySpec, dimensions: Sequence[Dimension]) -> None:
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
    named = [
        system.name
        for system in spec.systems
        if any(_mentions(shown, label) for label in (system.name, system.anonymous_code))
    ]
    if named:
        raise StudyDesignError(
            f"the title or instructions name {', '.join(named)}: raters must not learn which systems are compared"
        )


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, flags=re.IGNORECASE) is not None


def _usable_outputs(
    spec: StudySpec, rates_audio: bool, rates_content: bool
) -> dict[int, dict[int, ModelOutput]]:
    """Return item -> system -> output, for outputs a rater can judge on every chosen dimension."""
    outputs = ModelOutput.objects.filter(
        system__in=spec.systems, benchmark_version=spec.benchmark_version, item__recording__isnull=False
    ).select_related("item__recording")
    if rates_audio:
        outputs = outputs.exclude(response_audio_key="")
    if rates_content:
        outputs = outputs.exclude(Q(response_text="") & Q(raw_text=""))
    answers: dict[int, dict[int, ModelOutput]] = {}
    for output in outputs:
        answers.setdefault(output.item_id, {})[output.system_id] = output
    return answers


def _pick_training(
    answers: Mapping[int, Mapping[int, ModelOutput]],
    chosen: Sequence[int],
    gold_items: set[int],
    count: int,
    rng: random.Random,
) -> list[ModelOutput]:
    """Return training outputs, from items outside the sample when there are enough of them.

    Training on an item that comes back later would let a rater anchor on its first answer.
    """
    taken = set(chosen) | gold_items
    elsewhere = [
        output for item, by_system in answers.items() if item not in taken for output in by_system.values()
    ]
    if len(elsewhere) >= count:
        return rng.sample(sorted(elsewhere, key=lambda output: output.pk), count)
    sampled = [output for item in chosen for output in answers[item].values()]
    if len(elsewhere) + len(sampled) < count:
        raise StudyDesignError(
            f"{count} training samples were asked for but only {len(elsewhere + sampled)} exist"
        )
    return [*elsewhere, *rng.sample(sampled, count - len(elsewhere))]


def _synthesise_trap(score: int, frozen: _Frozen) -> tuple[str, float]:
    speech = synthesize(trap_sentence(score))
    return frozen.store_wav(to_wav_bytes(speech.samples, speech.sample_rate)), speech.duration_seconds


def _output_stimulus(
    study: Study,
    kind: str,
    output: ModelOutput,
    expected: Mapping[str, list[int]],
    frozen: _Frozen,
    rates_audio: bool,
) -> StudyStimulus:
    key, seconds = frozen.copy(output.response_audio_key) if output.response_audio_key else ("", 0.0)
    if rates_audio and not key:
        raise StudyDesignError("every output in an audio study needs response audio")
    return StudyStimulus.objects.create(
        study=study,
        kind=kind,
        output=output,
        system_id=output.system_id,
        item_id=output.item_id,
        response_text=output.response_text or output.raw_text,
        audio_key=key,
        audio_seconds=seconds,
        expected=dict(expected),
    )


def _plain(stimulus: StudyStimulus) -> Stimulus:
    return Stimulus(key=str(stimulus.pk), item=str(stimulus.item_id), kind=cast(StimulusKind, stimulus.kind))


# --- Rating -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def percent(self) -> int:
        """Return the share done, in whole percent."""
        return round(100 * self.done / self.total) if self.total else 100


def rater_progress(study: Study, evaluator: User) -> Progress:
    """Return how many of the evaluator's assignments in the study are submitted."""
    mine = StudyAssignment.objects.filter(study=study, evaluator=evaluator)
    return Progress(done=mine.filter(submitted_at__isnull=False).count(), total=mine.count())


def next_assignment(study: Study, evaluator: User) -> StudyAssignment | None:
    """Return the evaluator's first unsubmitted assignment in presentation order, or None when done."""
    return (
        StudyAssignment.objects.filter(study=study, evaluator=evaluator, submitted_at__isnull=True)
        .select_related("stimulus__item__recording")
        .order_by("position")
        .first()
    )


def present(assignment: StudyAssignment, now: datetime | None = None) -> None:
    """Remember when the evaluator first saw the assignment (playback cannot end sooner)."""
    if assignment.presented_at is None:
        assignment.presented_at = now or timezone.now()
        # filter(presented_at=None): a second tab showing the page must not move the first time.
        StudyAssignment.objects.filter(pk=assignment.pk, presented_at__isnull=True).update(
            presented_at=assignment.presented_at
        )


def record_playback(assignment: StudyAssignment, now: datetime | None = None) -> StudyAssignment:
    """Record that the response was played to the end; refuse a report that comes too soon to be true."""
    now = now or timezone.now()
    if assignment.played_at is not None:
        return assignment
    if assignment.presented_at is None:
        raise RatingRefused("Open the sample before playing it.")
    earliest = assignment.presented_at + timedelta(
        seconds=max(0.0, assignment.stimulus.audio_seconds - PLAYBACK_SLACK_SECONDS)
    )
    if now < earliest:
        raise RatingRefused("Play the whole response, from start to end, before rating.")
    assignment.played_at = now
    StudyAssignment.objects.filter(pk=assignment.pk, played_at__isnull=True).update(played_at=now)
    return assignment


def submit_rating(
    assignment_id: int, scores: Mapping[str, int], now: datetime | None = None
) -> StudyAssignment:
    """Store the evaluator's scores for one assignment; refuse anything the study's rules forbid.

    Refused: a second submission (ratings are final, as in a blind listening test), one out of
    presentation order, one before the response was played to the end, or scores that do not
    cover exactly the study's dimensions with 1-5.
    """
    with transaction.atomic():
        # Locked: a double press of Enter or two open tabs must not store two sets of scores.
        assignment = (
            StudyAssignment.objects.select_for_update()
            .select_related("study", "stimulus")
            .get(pk=assignment_id)
        )
        if assignment.submitted_at is not None:
            raise RatingRefused("This sample is already rated.")
        earlier_open = StudyAssignment.objects.filter(
            study_id=assignment.study_id,
            evaluator_id=assignment.evaluator_id,
            position__lt=assignment.position,
            submitted_at__isnull=True,
        ).exists()
        if earlier_open:
            raise RatingRefused("Rate the samples in the order they are given.")
        if assignment.stimulus.audio_key and assignment.played_at is None:
            raise RatingRefused("Play the whole response before rating it.")
        expected = set(assignment.study.dimensions)
        if set(scores) != expected or any(score not in SCORES for score in scores.values()):
            raise RatingRefused("Give every question a score from 1 to 5.")
        StudyRating.objects.bulk_create(
            StudyRating(assignment=assignment, dimension=dimension, score=score)
            for dimension, score in scores.items()
        )
        assignment.submitted_at = now or timezone.now()
        assignment.save(update_fields=["submitted_at"])
    return assignment


# --- Screening and results ----------------------------------------------------------------------


def decide_rater(
    study: Study, evaluator_id: int, decision: str, decided_by: User, note: str = ""
) -> StudyRater:
    """Record an admin's decision to include or exclude a rater from the study's figures."""
    if decision not in StudyRater.Decision.values:
        raise ValueError(f"unknown decision {decision!r}")
    with transaction.atomic():
        # Locked so two admins deciding at once leave one consistent (decision, by, at) triple.
        seat = StudyRater.objects.select_for_update().get(study=study, evaluator_id=evaluator_id)
        seat.decision = decision
        seat.decision_note = note
        seat.decided_by = decided_by
        seat.decided_at = timezone.now()
        seat.save(update_fields=["decision", "decision_note", "decided_by", "decided_at"])
    return seat


def study_rating_rows(study: Study) -> list[RatingRow]:
    """Return every submitted score of the study as a plain row (raters by username, systems by name)."""
    ratings = StudyRating.objects.filter(assignment__study=study).values_list(
        "assignment__evaluator__username",
        "assignment__stimulus__public_id",
        "assignment__stimulus__kind",
        "assignment__stimulus__system__name",
        "assignment__stimulus__item__external_id",
        "dimension",
        "score",
    )
    return [
        RatingRow(
            rater=rater,
            stimulus=str(stimulus),
            kind=cast(StimulusKind, kind),
            system=system or "",
            item=item,
            dimension=dimension,
            score=score,
        )
        for rater, stimulus, kind, system, item, dimension, score in ratings
    ]


def study_expectations(study: Study) -> dict[str, dict[str, tuple[int, int]]]:
    """Return the known answers of the study's gold and trapping items."""
    checks = study.stimuli.filter(kind__in=[StudyStimulus.Kind.GOLD, StudyStimulus.Kind.TRAP])
    return {
        str(stimulus.public_id): {
            dimension: (low, high) for dimension, (low, high) in stimulus.expected.items()
        }
        for stimulus in checks
    }


def screen_study(study: Study, rows: Sequence[RatingRow] | None = None) -> list[RaterReport]:
    """Return the screening of every rater who has submitted anything."""
    rules = ScreeningRules(
        variance_threshold=study.straightlining_variance,
        correlation_threshold=study.min_correlation,
        allowed_check_failures=study.allowed_check_failures,
    )
    return screen_study_raters(
        study_rating_rows(study) if rows is None else rows, study_expectations(study), rules
    )


def summarise_study(study: Study, rows: Sequence[RatingRow] | None = None) -> StudySummary:
    """Return the study's figures without the raters an admin excluded."""
    excluded = study.raters.filter(decision=StudyRater.Decision.EXCLUDE).values_list(
        "evaluator__username", flat=True
    )
    return summarise_ratings(
        study_rating_rows(study) if rows is None else rows,
        [system.name for system in study.systems.order_by("name")],
        study.dimensions,
        excluded_raters=list(excluded),
        seed=study.seed,
    )


def study_figures(study: Study) -> tuple[list[RaterReport], StudySummary]:
    """Return the screening and the figures, reused until a rating arrives or a decision changes.

    Bootstrap intervals and pairwise tests of a large study take seconds; an admin reloading the
    results must not pay that each time. Ratings are final (never edited or deleted), so their
    count and highest id, with the decisions, identify what the figures rest on.
    """
    ratings = StudyRating.objects.filter(assignment__study=study).aggregate(n=Count("id"), last=Max("id"))
    decisions = list(study.raters.order_by("evaluator_id").values_list("evaluator_id", "decision"))
    fingerprint = hashlib.sha256(repr((ratings, decisions)).encode()).hexdigest()[:32]
    key = f"study-figures:{study.public_id}:{fingerprint}"
    cached = cache.get(key)
    if cached is not None:
        return cast(tuple[list[RaterReport], StudySummary], cached)
    rows = study_rating_rows(study)
    figures = (screen_study(study, rows), summarise_study(study, rows))
    cache.set(key, figures, FIGURES_CACHE_SECONDS)
    return figures
