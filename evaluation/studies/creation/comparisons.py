"""Creating a comparison study (CCR/CMOS, A/B, MUSHRA): sample items, freeze every system's answer,
build the trials, plan who rates which trial when, and where each rater hears each sample.

A trial is a `StudyStimulus` with no audio of its own whose `parts` are the samples it plays, so
the ACR planner (`design.plan_study`: each trial by `ratings_per_output` raters, loads even, no
item twice in a row, practice first) and the rating queue serve comparison studies unchanged.
Each rater's `StudySlot`s say where they hear each part: pairs in the order `trials.balanced_orders`
gives (both orders, balanced per trial and per rater; DCR always plays the reference first), MUSHRA's conditions shuffled per rater and
trial behind the open reference. MUSHRA's hidden reference is a second copy of the reference under
its own random key (its link must not match the open reference's), and its anchors are the
reference low-pass filtered (`evaluation.studies.anchors`), levelled like every clip.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Collection, Sequence

from django.db import transaction

from evaluation.outputs.models import System
from evaluation.studies.anchors import ANCHORS, anchor_wav
from evaluation.studies.creation.items import (
    FrozenAudio,
    FrozenClip,
    StudySpec,
    assign_in_plan_order,
    check_spec,
    new_study,
    pick_warm_up,
)
from evaluation.studies.design import (
    Stimulus,
    StudyDesignError,
    dimensions_for,
    plan_study,
    sample_stratified,
)
from evaluation.studies.models import (
    Study,
    StudyAssignment,
    StudySlot,
    StudyStimulus,
    StudyTrialPart,
)
from evaluation.studies.samples import Sample, usable_outputs
from evaluation.studies.trials import balanced_orders, pair_trials, shuffled
from webapp.models import User
from webapp.storage import delete_media, read_media

ANCHOR_ROLES = {"low": StudyTrialPart.Role.LOW_ANCHOR, "mid": StudyTrialPart.Role.MID_ANCHOR}


def check_comparison_spec(spec: StudySpec) -> None:
    """Refuse a comparison design that cannot be run, saying what to change."""
    if spec.kind not in (Study.Kind.CCR, Study.Kind.DCR, Study.Kind.AB, Study.Kind.MUSHRA):
        raise StudyDesignError(f"unknown study kind {spec.kind!r}")
    if spec.unit != Study.Unit.ITEM:
        raise StudyDesignError("comparison studies compare single-turn outputs; choose single-turn outputs")
    dimensions = dimensions_for(spec.dimensions)
    if len(dimensions) != 1 or dimensions[0].modality != "audio":
        raise StudyDesignError(
            "a comparison study asks one question about the audio: choose one audio dimension"
        )
    if spec.gold:
        raise StudyDesignError("comparison studies have no gold outputs; leave the gold lists empty")
    reference = spec.reference_system
    if reference is not None and reference not in spec.systems:
        raise StudyDesignError("the reference must be one of the chosen systems")
    if spec.kind == Study.Kind.DCR and reference is None:
        raise StudyDesignError("a DCR study needs a reference system: every other system is heard after it")
    if spec.kind == Study.Kind.MUSHRA:
        if reference is None:
            raise StudyDesignError("a MUSHRA study needs a reference system")
        if "low" not in spec.anchors:
            raise StudyDesignError("BS.1534 asks for the 3.5 kHz low anchor in every MUSHRA trial")
        unknown = set(spec.anchors) - set(ANCHORS)
        if unknown:
            raise StudyDesignError(f"unknown anchors: {', '.join(sorted(unknown))}")
        if len(spec.systems) < 2:
            raise StudyDesignError("a MUSHRA study needs at least one system besides the reference")
    elif spec.anchors:
        raise StudyDesignError("anchors belong to MUSHRA studies")
    if spec.kind == Study.Kind.AB and reference is not None:
        raise StudyDesignError("an A/B study compares every pair of systems; leave the reference empty")
    if spec.kind != Study.Kind.MUSHRA:
        pair_trials([str(system.pk) for system in spec.systems], _key(reference))


def create_comparison_study(spec: StudySpec, created_by: User) -> Study:
    """Build the study `spec` describes (a CCR, A/B or MUSHRA study); raises StudyDesignError."""
    dimensions = dimensions_for(spec.dimensions)
    check_spec(spec, dimensions)
    check_comparison_spec(spec)
    seed = spec.seed if spec.seed is not None else secrets.randbits(31)
    rng = random.Random(seed)
    answers = usable_outputs(spec.systems, spec.benchmark_version, rates_audio=True, rates_content=False)
    complete = {item: by_system for item, by_system in answers.items() if len(by_system) == len(spec.systems)}
    if spec.items_per_system > len(complete):
        raise StudyDesignError(
            f"{spec.items_per_system} items were asked for, but only {len(complete)} items have "
            "a spoken answer from every chosen system"
        )
    strata: dict[str, list[str]] = {}
    for item_id, by_system in complete.items():
        strata.setdefault(next(iter(by_system.values())).stratum, []).append(str(item_id))
    chosen = [int(key) for key in sample_stratified(strata, spec.items_per_system, rng)]
    others = sorted(set(complete) - set(chosen))
    practice = pick_warm_up(others, chosen, spec.training_count, rng, "practice items")

    frozen = FrozenAudio()
    try:
        with transaction.atomic():
            study = new_study(
                spec,
                dimensions,
                seed,
                created_by,
                kind=spec.kind,
                reference_system=spec.reference_system,
                anchors=[anchor for anchor in ANCHORS if anchor in spec.anchors],
                trap_score=spec.trap_score,
            )
            rated = [
                trial
                for item_id in chosen
                for trial in _trials(study, spec, complete[item_id], StudyStimulus.Kind.RATED, frozen)
            ]
            warm_up = [
                trial
                for item_id in practice
                for trial in _trials(study, spec, complete[item_id], StudyStimulus.Kind.TRAINING, frozen)
            ]
            evaluators = [str(user.pk) for user in spec.evaluators]
            plan = plan_study(
                [_plain(trial) for trial in rated],
                evaluators,
                spec.ratings_per_output,
                training=[_plain(trial) for trial in warm_up],
                seed=seed,
            )
            by_key = {str(trial.pk): trial for trial in (*rated, *warm_up)}
            assign_in_plan_order(study, plan, by_key)
            place_parts(study, rng)
    except BaseException:
        delete_media(*frozen.keys)
        raise
    return study


def _key(system: System | None) -> str | None:
    return None if system is None else str(system.pk)


def _trials(
    study: Study, spec: StudySpec, by_system: dict[int, Sample], kind: str, frozen: FrozenAudio
) -> list[StudyStimulus]:
    """Freeze one item's answers and return its trials: its pairs, or its one MUSHRA trial."""
    item = next(iter(by_system.values())).item
    clips = {system_id: frozen.copy(sample.audio_key) for system_id, sample in by_system.items()}
    samples = {
        system_id: _sample(study, kind, item.pk, clip, system_id, by_system[system_id])
        for system_id, clip in clips.items()
    }
    reference = spec.reference_system
    if spec.kind == Study.Kind.MUSHRA:
        assert reference is not None  # check_comparison_spec
        trial = _container(study, kind, item.pk)
        parts = [(samples[reference.pk], StudyTrialPart.Role.REFERENCE)]
        hidden = frozen.copy(by_system[reference.pk].audio_key)
        parts.append(
            (_sample(study, kind, item.pk, hidden, reference.pk), StudyTrialPart.Role.HIDDEN_REFERENCE)
        )
        parts += [
            (samples[system.pk], StudyTrialPart.Role.SYSTEM) for system in spec.systems if system != reference
        ]
        source = read_media(clips[reference.pk].original_key)
        for anchor in (anchor for anchor in ANCHORS if anchor in spec.anchors):
            try:
                filtered = anchor_wav(source, ANCHORS[anchor])
            except ValueError as problem:
                raise StudyDesignError(f"the reference of {item.external_id}: {problem}") from None
            clip = frozen.store_wav(filtered, clips[reference.pk].seconds)
            parts.append((_sample(study, kind, item.pk, clip, None), ANCHOR_ROLES[anchor]))
        _add_parts(trial, parts)
        return [trial]
    trials = []
    for first, second in pair_trials([str(system.pk) for system in spec.systems], _key(reference)):
        trial = _container(study, kind, item.pk)
        first_role = StudyTrialPart.Role.REFERENCE if reference is not None else StudyTrialPart.Role.SYSTEM
        _add_parts(
            trial, [(samples[int(first)], first_role), (samples[int(second)], StudyTrialPart.Role.SYSTEM)]
        )
        trials.append(trial)
    return trials


def _container(study: Study, kind: str, item_id: int) -> StudyStimulus:
    return StudyStimulus.objects.create(study=study, kind=kind, item_id=item_id)


def _sample(
    study: Study,
    kind: str,
    item_id: int,
    clip: FrozenClip,
    system_id: int | None,
    sample: Sample | None = None,
) -> StudyStimulus:
    return StudyStimulus.objects.create(
        study=study,
        kind=kind,
        output=sample.output if sample else None,
        system_id=system_id,
        item_id=item_id,
        audio_key=clip.key,
        original_audio_key=clip.original_key,
        audio_seconds=clip.seconds,
    )


def _add_parts(trial: StudyStimulus, parts: Sequence[tuple[StudyStimulus, str]]) -> None:
    StudyTrialPart.objects.bulk_create(
        StudyTrialPart(trial=trial, sample=sample, role=role, order=order)
        for order, (sample, role) in enumerate(parts)
    )


def _plain(trial: StudyStimulus) -> Stimulus:
    return Stimulus(key=str(trial.pk), item=str(trial.item_id), kind="rated")


def place_parts(study: Study, rng: random.Random, evaluator_ids: Collection[int] | None = None) -> None:
    """Create the slots of every rater's trials (or only those of `evaluator_ids`, raters added
    later, e.g. a crowd's seats): pairs in an order counterbalanced over these raters, MUSHRA
    conditions shuffled."""
    parts: dict[int, list[StudyTrialPart]] = {}
    for part in StudyTrialPart.objects.filter(trial__study=study).order_by("trial_id", "order"):
        parts.setdefault(part.trial_id, []).append(part)
    assignments = StudyAssignment.objects.filter(study=study).select_related("stimulus")
    if evaluator_ids is not None:
        assignments = assignments.filter(evaluator_id__in=evaluator_ids)
    flipped: dict[tuple[str, str], bool] = {}
    if study.is_pairs:
        # Rated pairs and practice pairs are balanced separately: practice is everyone's, in full.
        for kind in (StudyStimulus.Kind.RATED, StudyStimulus.Kind.TRAINING):
            shares: dict[str, list[str]] = {}
            for assignment in assignments:
                if assignment.stimulus.kind == kind:
                    shares.setdefault(str(assignment.evaluator_id), []).append(str(assignment.stimulus_id))
            # DCR plays the reference first by definition: nothing to balance.
            flipped.update(
                dict.fromkeys(((r, t) for r, own in shares.items() for t in own), False)
                if study.reference_first
                else balanced_orders(shares)
            )
    slots = []
    for assignment in assignments:
        own = parts[assignment.stimulus_id]
        if study.is_pairs:
            order = own[::-1] if flipped[(str(assignment.evaluator_id), str(assignment.stimulus_id))] else own
            placed = list(enumerate(order, start=1))
        else:
            reference = [part for part in own if part.role == StudyTrialPart.Role.REFERENCE]
            conditions = [part for part in own if part.role != StudyTrialPart.Role.REFERENCE]
            by_id = {str(part.pk): part for part in conditions}
            shuffled_ids = shuffled([str(part.pk) for part in conditions], rng)
            placed = [(0, reference[0]), *((n, by_id[key]) for n, key in enumerate(shuffled_ids, start=1))]
        slots += [StudySlot(assignment=assignment, part=part, position=position) for position, part in placed]
    StudySlot.objects.bulk_create(slots)
