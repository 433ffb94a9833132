"""Read-only figures of comparison studies (CCR, A/B, MUSHRA): rows out of the database in a fixed
number of queries, the statistics from the pure `evaluation.studies.comparisons`, and the exports.

Only rated trials count (practice trials count for nothing), and raters an admin excluded, or the
MUSHRA post-screening excluded, leave every figure but are listed with why.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from django.db.models import F

from evaluation.studies.comparisons import (
    HIDDEN_REFERENCE,
    LOW_ANCHOR,
    MID_ANCHOR,
    BoxStats,
    CmosCell,
    ExcludedRater,
    MushraScore,
    MushraScreen,
    PairVote,
    Preference,
    RaterTime,
    bradley_terry,
    comparison_mos,
    excluded_raters,
    finite,
    mushra_post_screening,
    mushra_summary,
    time_on_task,
)
from evaluation.studies.models import (
    Study,
    StudyAssignment,
    StudyRater,
    StudySlot,
    StudyStimulus,
    StudyTrialPart,
)
from evaluation.studies.reports import study_progress
from webapp.lib.spreadsheet import NeutralDictWriter

# What admins read for a MUSHRA condition that is not a system.
CONDITION_NAMES: dict[str, str] = {
    StudyTrialPart.Role.HIDDEN_REFERENCE: HIDDEN_REFERENCE,
    StudyTrialPart.Role.LOW_ANCHOR: LOW_ANCHOR,
    StudyTrialPart.Role.MID_ANCHOR: MID_ANCHOR,
}


@dataclass(frozen=True)
class ComparisonFigures:
    kind: str
    systems: tuple[str, ...]
    reference: str | None
    n_answers: int  # rated trials answered by raters kept in the figures
    cmos: tuple[CmosCell, ...] = ()
    preference: Preference | None = None
    conditions: tuple[str, ...] = ()
    mushra: tuple[BoxStats, ...] = ()
    screening: tuple[MushraScreen, ...] = ()
    excluded: tuple[ExcludedRater, ...] = ()
    times: tuple[RaterTime, ...] = ()


def pair_votes(study: Study) -> list[PairVote]:
    """Return every answered rated pair of the study as the rater gave it (two queries)."""
    rated = {"assignment__study": study, "assignment__stimulus__kind": StudyStimulus.Kind.RATED}
    answers = StudySlot.objects.filter(position=2, score__isnull=False, **rated).values_list(
        "assignment_id",
        "assignment__evaluator__username",
        "assignment__stimulus__item__external_id",
        "part__sample__system__name",
        "score",
    )
    firsts = dict(
        StudySlot.objects.filter(position=1, assignment__submitted_at__isnull=False, **rated).values_list(
            "assignment_id", "part__sample__system__name"
        )
    )
    return [
        PairVote(rater, item, firsts[assignment], second, score)
        for assignment, rater, item, second, score in answers
        if score is not None
    ]


def mushra_scores(study: Study) -> list[MushraScore]:
    """Return every score of the study's rated MUSHRA trials, conditions named (one query)."""
    rows = StudySlot.objects.filter(
        assignment__study=study,
        assignment__stimulus__kind=StudyStimulus.Kind.RATED,
        score__isnull=False,
        position__gt=0,
    ).values_list(
        "assignment_id",
        "assignment__evaluator__username",
        "assignment__stimulus__item__external_id",
        "part__role",
        "part__sample__system__name",
        "score",
    )
    return [
        MushraScore(rater, str(trial), item, CONDITION_NAMES.get(role, system or ""), score)
        for trial, rater, item, role, system, score in rows
        if score is not None
    ]


def trial_times(study: Study) -> list[tuple[str, float]]:
    """Return (rater, seconds from first showing to answer) for every answered trial (one query)."""
    rows = (
        StudyAssignment.objects.filter(study=study, submitted_at__isnull=False, presented_at__isnull=False)
        .annotate(spent=F("submitted_at") - F("presented_at"))
        .values_list("evaluator__username", "spent")
    )
    return [(rater, spent.total_seconds()) for rater, spent in rows]


def admin_exclusions(study: Study) -> dict[str, str]:
    """Return rater -> the admin's note, for the raters an admin excluded."""
    return dict(
        study.raters.filter(decision=StudyRater.Decision.EXCLUDE).values_list(
            "evaluator__username", "decision_note"
        )
    )


def analyse(
    kind: str,
    systems: Sequence[str],
    reference: str | None,
    votes: Sequence[PairVote] = (),
    scores: Sequence[MushraScore] = (),
    decisions: dict[str, str] | None = None,
    times: Sequence[tuple[str, float]] = (),
    anchors: Sequence[str] = (),
    seed: int = 0,
) -> ComparisonFigures:
    """Return the figures of a comparison study from its rows (what `bench/study_analysis.py` times)."""
    decisions = decisions or {}
    screening = mushra_post_screening(scores) if kind == Study.Kind.MUSHRA else []
    excluded = excluded_raters(decisions, screening)
    left_out = {entry.rater for entry in excluded}
    kept_votes = [vote for vote in votes if vote.rater not in left_out]
    figures = ComparisonFigures(
        kind=kind,
        systems=tuple(systems),
        reference=reference,
        n_answers=len(kept_votes),
        excluded=tuple(excluded),
        times=tuple(time_on_task(times)),
    )
    if kind in (Study.Kind.CCR, Study.Kind.DCR):
        # DCR: the reference is always first, so a system's oriented vote is the 1-5 answer (DMOS).
        cells = comparison_mos(kept_votes, systems, reference)
        return replace(figures, cmos=tuple(cells))
    if kind == Study.Kind.AB:
        return replace(figures, preference=bradley_terry(kept_votes, systems, seed=seed))
    conditions = [
        HIDDEN_REFERENCE,
        *(system for system in systems if system != reference),
        *(CONDITION_NAMES[StudyTrialPart.Role.MID_ANCHOR] for anchor in anchors if anchor == "mid"),
        LOW_ANCHOR,
    ]
    kept_trials = {(row.rater, row.trial) for row in scores if row.rater not in left_out}
    return replace(
        figures,
        n_answers=len(kept_trials),
        conditions=tuple(conditions),
        mushra=tuple(mushra_summary(scores, conditions, left_out)),
        screening=tuple(screening),
    )


def comparison_figures(study: Study) -> ComparisonFigures:
    """Return a comparison study's figures (a fixed number of queries however many answers)."""
    systems = [system.name for system in study.systems.order_by("name")]
    reference = study.reference_system.name if study.reference_system else None
    if reference is not None:
        systems = [reference, *(name for name in systems if name != reference)]
    pairs = study.is_pairs
    return analyse(
        study.kind,
        systems,
        reference,
        votes=pair_votes(study) if pairs else (),
        scores=mushra_scores(study) if not pairs else (),
        decisions=admin_exclusions(study),
        times=trial_times(study),
        anchors=study.anchors,
        seed=study.seed,
    )


def comparison_results_context(study: Study) -> dict[str, Any]:
    """Return the comparison results page's context: tables, chart data, exclusions, times."""
    figures = comparison_figures(study)
    progress = study_progress(study)
    seats = study.raters.select_related("evaluator", "decided_by")
    return {
        "study": study,
        "figures": figures,
        "seats": seats,
        "decisions": StudyRater.Decision,
        "submitted": progress.done,
        "total": progress.total,
        "chart": comparison_chart(figures),
        "win_rows": _win_rows(figures),
        "dimension": study.dimension_list()[0],
    }


def _win_rows(figures: ComparisonFigures) -> list[dict[str, Any]]:
    if figures.preference is None:
        return []
    preference = figures.preference
    return [
        {
            "system": a,
            "cells": [
                {"rate": preference.win_rate[a][b], "n": preference.counts[a][b], "self": a == b}
                for b in preference.systems
            ],
        }
        for a in preference.systems
    ]


def comparison_chart(figures: ComparisonFigures) -> dict[str, Any]:
    """Return the chart's data for static/js/comparison_chart.js: bars with interval whiskers
    (CMOS, Bradley–Terry) or boxes (MUSHRA: quartiles as floating bars, whiskers, medians)."""
    if figures.kind in (Study.Kind.CCR, Study.Kind.DCR):
        dcr = figures.kind == Study.Kind.DCR
        return {
            "type": "bars",
            "axis": "DMOS (1-5), 95% interval" if dcr else "CMOS (-3..+3), 95% interval",
            "min": 0 if dcr else -3,
            "max": 5 if dcr else 3,
            "labels": [f"{cell.system} vs {cell.versus}" for cell in figures.cmos],
            "data": [finite(cell.mean) for cell in figures.cmos],
            "low": [finite(cell.low) for cell in figures.cmos],
            "high": [finite(cell.high) for cell in figures.cmos],
        }
    if figures.kind == Study.Kind.AB and figures.preference is not None:
        scores = figures.preference.scores
        return {
            "type": "bars",
            "axis": "Bradley–Terry log-strength, 95% bootstrap interval",
            "min": None,
            "max": None,
            "labels": [score.system for score in scores],
            "data": [finite(score.score) for score in scores],
            "low": [finite(score.low) for score in scores],
            "high": [finite(score.high) for score in scores],
        }
    return {
        "type": "boxes",
        "axis": "MUSHRA score (0-100)",
        "min": 0,
        "max": 100,
        "labels": [box.condition for box in figures.mushra],
        "boxes": [[box.q1, box.q3] if box.q1 is not None else None for box in figures.mushra],
        "median": [box.median for box in figures.mushra],
        "low": [box.whisker_low for box in figures.mushra],
        "high": [box.whisker_high for box in figures.mushra],
    }


# --- Exports ------------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "figure",
    "system",
    "versus",
    "estimate",
    "ci_low",
    "ci_high",
    "median",
    "q1",
    "q3",
    "whisker_low",
    "whisker_high",
    "n",
    "n_items",
    "rater",
    "detail",
)


def figures_csv(figures: ComparisonFigures) -> str:
    """Return every figure as CSV (the project's formula-safe writer): one row per CMOS cell,
    Bradley–Terry score, win rate, MUSHRA condition, excluded rater and rater's time on task."""
    buffer = io.StringIO()
    writer = NeutralDictWriter(buffer, fieldnames=CSV_COLUMNS, restval="")
    writer.writeheader()
    for cell in figures.cmos:
        writer.writerow(
            {
                "figure": "dmos" if figures.kind == Study.Kind.DCR else "cmos",
                "system": cell.system,
                "versus": cell.versus,
                "estimate": _number(cell.mean),
                "ci_low": _number(cell.low),
                "ci_high": _number(cell.high),
                "n": cell.n_votes,
                "n_items": cell.n_items,
            }
        )
    if figures.preference is not None:
        for score in figures.preference.scores:
            writer.writerow(
                {
                    "figure": "bradley_terry",
                    "system": score.system,
                    "estimate": _number(score.score),
                    "ci_low": _number(score.low),
                    "ci_high": _number(score.high),
                    "n": score.comparisons,
                    "detail": f"wins {score.wins:g}",
                }
            )
        for a, row in figures.preference.win_rate.items():
            for b, rate in row.items():
                if a != b:
                    writer.writerow(
                        {
                            "figure": "win_rate",
                            "system": a,
                            "versus": b,
                            "estimate": _number(rate),
                            "n": figures.preference.counts[a][b],
                        }
                    )
    for box in figures.mushra:
        writer.writerow(
            {
                "figure": "mushra",
                "system": box.condition,
                "estimate": _number(box.mean),
                "ci_low": _number(box.low),
                "ci_high": _number(box.high),
                "median": _number(box.median),
                "q1": _number(box.q1),
                "q3": _number(box.q3),
                "whisker_low": _number(box.whisker_low),
                "whisker_high": _number(box.whisker_high),
                "n": box.n,
            }
        )
    for entry in figures.excluded:
        writer.writerow(
            {"figure": "excluded_rater", "rater": entry.rater, "detail": "; ".join(entry.reasons)}
        )
    for time in figures.times:
        writer.writerow(
            {
                "figure": "time_on_task",
                "rater": time.rater,
                "estimate": _number(time.total_seconds),
                "median": _number(time.median_seconds),
                "n": time.trials,
            }
        )
    return buffer.getvalue()


def figures_json(figures: ComparisonFigures) -> dict[str, Any]:
    """Return every figure as JSON-ready data (non-finite numbers as null)."""
    return dict(_jsonable(asdict(figures)))


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return finite(value)
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


def _number(value: float | None) -> str:
    value = finite(value)
    return "" if value is None else f"{value:.4f}"
