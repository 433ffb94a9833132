"""Read-only aggregations of listening studies: progress, the study list, screening and figures.

Each page's numbers come from a fixed number of queries however many studies, raters or ratings
there are; the statistics themselves are pure (`evaluation.studies.results` and `.screening`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from django.core.cache import cache
from django.db.models import Count, Max, Q

from annotation.recording.models import Dialogue
from evaluation.outputs.audio_metrics import METRICS, Metric, current_metrics
from evaluation.studies.design import DIMENSIONS, Dimension, StimulusKind
from evaluation.studies.models import (
    Study,
    StudyAssignment,
    StudyRater,
    StudyRating,
    StudyStimulus,
    StudyTurn,
)
from evaluation.studies.results import (
    MIN_CORRELATION_PAIRS,
    ObjectiveCorrelation,
    StudySummary,
    objective_correlations,
    summarise_ratings,
)
from evaluation.studies.screening import RaterReport, RatingRow, ScreeningRules, screen_study_raters
from webapp.archive import archived_note
from webapp.models import User, in_use_filter
from webapp.storage import audio_url

FIGURES_CACHE_SECONDS = 600


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    # In a dialogue study, the conversation in hand is rated turn by turn: how many of its turns
    # are saved, of how many, so the rater's progress moves with every saved turn.
    turns_done: int = 0
    turns: int = 0

    @property
    def percent(self) -> int:
        """Return the share done, in whole percent (a conversation's saved turns count their part)."""
        if not self.total:
            return 100
        part = self.turns_done / self.turns if self.turns else 0.0
        return round(100 * (self.done + part) / self.total)

    @property
    def text(self) -> str:
        """Where the rater is, for people and screen readers: "2 of 4" or "2 of 4, turn 3 of 5"."""
        where = f"{min(self.done + 1, self.total)} of {self.total}"
        if self.turns:
            where += f", turn {min(self.turns_done + 1, self.turns)} of {self.turns}"
        return where

    def with_turns(self, turns_done: int, turns: int) -> Progress:
        """Return this progress with the conversation in hand's saved turns counted."""
        return replace(self, turns_done=turns_done, turns=turns)


def rater_progress(study: Study, evaluator: User) -> Progress:
    """Return how many of the evaluator's assignments in the study are submitted."""
    return _progress(StudyAssignment.objects.of_rater(study, evaluator).aggregate(**_PROGRESS))


# Counts of assignments, submitted and all, for aggregate() or annotate() over assignments.
_PROGRESS = {"done": Count("pk", filter=Q(submitted_at__isnull=False)), "total": Count("pk")}


def _progress(counts: dict[str, int]) -> Progress:
    return Progress(done=counts["done"], total=counts["total"])


def study_progress(study: Study) -> Progress:
    """Return how many of the study's assignments (every rater's) are submitted."""
    return _progress(study.assignments.aggregate(**_PROGRESS))


@dataclass(frozen=True)
class StudyRow:
    study: Study  # with its systems prefetched
    submitted: int
    total: int


def study_rows() -> list[StudyRow]:
    """Return every study, newest first, with how many of its assignments are submitted (two queries)."""
    # order_by again: Django leaves Meta.ordering out of aggregating queries.
    studies = (
        Study.objects.prefetch_related("systems")
        .annotate(
            n_submitted=Count("assignments", filter=Q(assignments__submitted_at__isnull=False)),
            n_assignments=Count("assignments"),
        )
        .order_by("-created_at")
    )
    return [StudyRow(study, study.n_submitted, study.n_assignments) for study in studies]


@dataclass(frozen=True)
class RaterStudy:
    study: Study
    progress: Progress


def evaluator_studies(evaluator: User) -> list[RaterStudy]:
    """Return the studies the evaluator was invited to, newest first, each with their progress."""
    seats = (
        StudyRater.objects.filter(evaluator=evaluator).select_related("study").order_by("-study__created_at")
    )
    progress = {
        row["study_id"]: _progress(row)
        for row in StudyAssignment.objects.filter(evaluator=evaluator)
        .order_by()
        .values("study_id")
        .annotate(**_PROGRESS)
    }
    return [RaterStudy(seat.study, progress.get(seat.study_id, Progress(0, 0))) for seat in seats]


def study_rating_rows(study: Study) -> list[RatingRow]:
    """Return every submitted score of the study as a plain row (raters by username, systems by name).

    In a dialogue study each assistant turn is a unit of its own: the row's stimulus is
    "<stimulus>#t<turn>" and its item the user's turn ("ED-1.t2"), so agreement, screening and
    pairwise tests compare ratings of the same reply, and systems on the same user turn.
    """
    ratings = (
        StudyRating.objects.in_use()
        .filter(assignment__study=study)
        .values_list(
            "assignment__evaluator__username",
            "assignment__stimulus__public_id",
            "assignment__stimulus__kind",
            "assignment__stimulus__system__name",
            "assignment__stimulus__item__external_id",
            "assignment__stimulus__dialogue__external_id",
            "turn",
            "dimension",
            "score",
        )
    )
    return [
        RatingRow(
            rater=rater,
            stimulus=f"{stimulus}#t{turn}" if dialogue else str(stimulus),
            kind=cast(StimulusKind, kind),
            system=system or "",
            item=Dialogue.turn_external_id(dialogue, turn) if dialogue else item,
            dimension=dimension,
            score=score,
            turn=turn,
        )
        for rater, stimulus, kind, system, item, dialogue, turn, dimension, score in ratings
    ]


def study_expectations(study: Study) -> dict[str, dict[str, tuple[int, int]]]:
    """Return the known answers of the study's gold and trapping items, keyed as rating rows name
    their stimulus (`study_rating_rows`): a dialogue's trapping turn as "<stimulus>#t<turn>"."""
    if study.is_dialogue:
        trap_turns = StudyTurn.objects.filter(stimulus__study=study).exclude(expected={})
        return {
            f"{public_id}#t{turn}": {dimension: (low, high) for dimension, (low, high) in expected.items()}
            for public_id, turn, expected in trap_turns.values_list("stimulus__public_id", "turn", "expected")
        }
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


def excluded_raters(study: Study) -> list[str]:
    """Return the usernames of the raters an admin excluded from the study's figures."""
    return list(
        study.raters.filter(decision=StudyRater.Decision.EXCLUDE).values_list(
            "evaluator__username", flat=True
        )
    )


def summarise_study(study: Study, rows: Sequence[RatingRow] | None = None) -> StudySummary:
    """Return the study's figures without the raters an admin excluded."""
    return summarise_ratings(
        study_rating_rows(study) if rows is None else rows,
        [system.name for system in study.systems.order_by("name")],
        study.dimensions,
        excluded_raters=excluded_raters(study),
        seed=study.seed,
        per_turn=study.is_dialogue,
        expected_outputs=expected_outputs(study),
        expected_turns=expected_turns(study) if study.is_dialogue else None,
    )


def expected_outputs(study: Study) -> dict[str, int]:
    """Return each system's rated outputs in the study (a dialogue study's: its rated replies,
    one per assistant turn), N of its MOS: one query."""
    if study.is_dialogue:
        replies = StudyTurn.objects.filter(stimulus__study=study, stimulus__kind=StudyStimulus.Kind.RATED)
        return dict(replies.values_list("stimulus__system__name").order_by().annotate(n=Count("pk")))
    stimuli = study.stimuli.filter(kind=StudyStimulus.Kind.RATED)
    return dict(stimuli.values_list("system__name").order_by().annotate(n=Count("pk")))


def expected_turns(study: Study) -> dict[tuple[str, int], int]:
    """Return, per (system, turn), the system's rated dialogues that have that turn (N of the MOS
    by turn of a dialogue study): one query."""
    replies = StudyTurn.objects.filter(stimulus__study=study, stimulus__kind=StudyStimulus.Kind.RATED)
    return {
        (system, turn): count
        for system, turn, count in replies.values_list("stimulus__system__name", "turn")
        .order_by()
        .annotate(n=Count("pk"))
    }


def study_figures(study: Study) -> tuple[list[RaterReport], StudySummary]:
    """Return the screening and the figures, reused until a rating arrives or a decision changes.

    Bootstrap intervals and pairwise tests of a large study take seconds; an admin reloading the
    results must not pay that each time. Ratings are final (never edited or deleted), so their
    count and highest id, with the decisions, identify what the figures rest on.
    """
    ratings = (
        StudyRating.objects.in_use().filter(assignment__study=study).aggregate(n=Count("id"), last=Max("id"))
    )
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


def stimulus_measures(study: Study) -> dict[str, dict[str, float | None]]:
    """Return the objective measures of each rated output's response audio (the output's current
    measurement, `evaluation.outputs.audio_metrics`), keyed as rating rows name the stimulus."""
    rated = (
        {"stimulus__kind": StudyStimulus.Kind.RATED}
        if study.is_dialogue
        else {"kind": StudyStimulus.Kind.RATED}
    )
    outputs: dict[str, int] = {}
    if study.is_dialogue:
        for public_id, turn, output_id in StudyTurn.objects.filter(
            stimulus__study=study, output__isnull=False, **rated
        ).values_list("stimulus__public_id", "turn", "output_id"):
            outputs[f"{public_id}#t{turn}"] = output_id
    else:
        for public_id, output_id in study.stimuli.filter(output__isnull=False, **rated).values_list(
            "public_id", "output_id"
        ):
            outputs[str(public_id)] = output_id
    keys = [metric.key for metric in METRICS]
    measured = {
        output_id: dict(zip(keys, values, strict=True))
        for output_id, *values in current_metrics()
        .filter(output_id__in=set(outputs.values()))
        .values_list("output_id", *keys)
    }
    return {stimulus: measured[output_id] for stimulus, output_id in outputs.items() if output_id in measured}


def objective_table(
    study: Study, rows: Sequence[RatingRow] | None = None
) -> list[tuple[Metric, list[ObjectiveCorrelation]]]:
    """Return, per objective measure, its Spearman correlation with the MOS of each audio dimension
    (the results page's table and the results API's)."""
    audio = [dimension.key for dimension in study.dimension_list() if dimension.modality == "audio"]
    if not audio:
        return []
    found = objective_correlations(
        study_rating_rows(study) if rows is None else rows,
        stimulus_measures(study),
        audio,
        [metric.key for metric in METRICS],
        excluded_raters(study),
    )
    return [
        (metric, [correlation for correlation in found if correlation.metric == metric.key])
        for metric in METRICS
    ]


@dataclass(frozen=True)
class Clip:
    kind: str
    system: str  # "" for a trapping item
    item: str  # the query, or the user's turn of a dialogue
    seconds: float
    heard_url: str  # at the study's level, as raters hear it
    original_url: str  # at its own level


def study_clips(study: Study, viewer: User) -> list[Clip]:
    """Return every clip of the study with links for `viewer` (an admin): as heard and as it was."""
    if study.is_dialogue:
        turns = (
            StudyTurn.objects.filter(stimulus__study=study)
            .exclude(audio_key="")
            .select_related("stimulus__system", "item")
            .order_by("stimulus__kind", "stimulus_id", "turn")
        )
        sources: list[tuple[StudyStimulus, str, StudyStimulus | StudyTurn]] = [
            (turn.stimulus, turn.item.external_id, turn) for turn in turns
        ]
    else:
        stimuli = study.stimuli.exclude(audio_key="").select_related("system", "item").order_by("kind", "pk")
        sources = [(stimulus, stimulus.item.external_id, stimulus) for stimulus in stimuli]
    return [
        Clip(
            kind=stimulus.get_kind_display(),
            system=stimulus.system.name if stimulus.system else "",
            item=item,
            seconds=clip.audio_seconds,
            heard_url=audio_url(clip.audio_key, viewer),
            original_url=audio_url(clip.original_audio_key, viewer),
        )
        for stimulus, item, clip in sources
    ]


def archived_ratings_note(study: Study) -> str:
    """Return what the results say of the study's archived ratings (“3 archived, not counted”)."""
    counts = StudyRating.objects.filter(assignment__study=study).aggregate(
        total=Count("pk"), in_use=Count("pk", filter=in_use_filter())
    )
    return archived_note(counts["total"], counts["in_use"])


def study_results_context(study: Study) -> dict[str, Any]:
    """Return the results page's context: rater seats with their screening, and the study's figures
    in the layout of the paper's Table 5 (a fixed number of queries however many raters)."""
    screening, summary = study_figures(study)
    by_rater = {report.rater: report for report in screening}
    dimensions = study.dimension_list()
    seats = study.raters.select_related("evaluator", "decided_by")
    raters = [
        {
            "seat": seat,
            "report": (report := by_rater.get(seat.evaluator.username)),
            "screens": _screen_lines(report) if report else [],
        }
        for seat in seats
    ]
    progress = study_progress(study)
    return {
        "study": study,
        "archived_note": archived_ratings_note(study),
        "raters": raters,
        "summary": summary,
        "dimensions": dimensions,
        "content_dimensions": [d for d in dimensions if d.modality == "content"],
        "audio_dimensions": [d for d in dimensions if d.modality == "audio"],
        "table": [
            {"system": system, "cells": [summary.cell(system, d.key) for d in dimensions]}
            for system in summary.systems
        ],
        "comparisons": [(DIMENSIONS[c.dimension].label, c.test) for c in summary.comparisons],
        "agreements": [(DIMENSIONS[a.dimension].label, a) for a in summary.agreement],
        "chart": _chart_data(summary),
        "turn_table": _turn_table(summary, dimensions),
        "turn_chart": _turn_chart_data(summary),
        "objective": objective_table(study),
        "min_pairs": MIN_CORRELATION_PAIRS,
        "submitted": progress.done,
        "total": progress.total,
        "decisions": StudyRater.Decision,
    }


def _screen_lines(report: RaterReport) -> list[str]:
    """Return one line per dimension: the variance and correlation the screening judged."""
    lines = []
    for key, screen in sorted(report.by_dimension.items()):
        r = screen.correlation_with_others
        agreement = "r undefined (too little overlap)" if math.isnan(r) else f"r = {r:.2f}"
        lines.append(
            f"{DIMENSIONS[key].label}: variance {screen.variance:.2f}, {agreement}, n = {screen.n_ratings}"
        )
    return lines


def _chart_data(summary: StudySummary) -> dict[str, Any]:
    """Return grouped bars (one dataset per system) with their interval ends, for study_chart.js."""
    return {
        "labels": [DIMENSIONS[key].label for key in summary.dimensions],
        "datasets": [
            {
                "label": system,
                "data": [summary.cell(system, key).mean for key in summary.dimensions],
                "low": [summary.cell(system, key).low for key in summary.dimensions],
                "high": [summary.cell(system, key).high for key in summary.dimensions],
                "n": [summary.cell(system, key).n_ratings for key in summary.dimensions],
                "coverage": [summary.cell(system, key).coverage.text for key in summary.dimensions],
                "comparable": [summary.cell(system, key).comparable for key in summary.dimensions],
            }
            for system in summary.systems
        ],
    }


def _turn_table(summary: StudySummary, dimensions: Sequence[Dimension]) -> list[dict[str, Any]]:
    """Return the per-turn breakdown as rows of (system, dimension) with one cell per turn."""
    return [
        {
            "system": system,
            "dimension": dimension,
            "cells": [summary.turn_cell(system, dimension.key, turn) for turn in summary.turns],
        }
        for system in summary.systems
        for dimension in dimensions
    ]


def _turn_chart_data(summary: StudySummary) -> dict[str, Any]:
    """Return MOS by turn (one line per system and dimension) with interval ends, for study_turn_chart.js."""
    return {
        "labels": [f"Turn {turn}" for turn in summary.turns],
        "datasets": [
            {
                "label": f"{system} · {DIMENSIONS[key].label}",
                "system": system,
                "data": [summary.turn_cell(system, key, turn).mean for turn in summary.turns],
                "low": [summary.turn_cell(system, key, turn).low for turn in summary.turns],
                "high": [summary.turn_cell(system, key, turn).high for turn in summary.turns],
                "n": [summary.turn_cell(system, key, turn).n_ratings for turn in summary.turns],
            }
            for system in summary.systems
            for key in summary.dimensions
        ],
    }
