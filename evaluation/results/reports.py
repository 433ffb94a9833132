"""Results queries: the Table-2 leaderboard and Table-8 error propagation, from stored judgements
(item drill-downs are in `drilldown`, the Table-3 judge-human agreement in `agreement`).

The database does the aggregation (a few grouped queries, however many scores are stored); the
rules of Tables 2 and 8 are those of `evaluation.results.leaderboard`, applied to the grouped figures:
means over valid judgements only, judge errors counted as excluded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Max, Q, QuerySet, Sum

from annotation.gold.models import GoldReference
from annotation.recording.consent.models import RESEARCH_EVALUATION
from annotation.recording.models import Item, Split, recording_consented_for
from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
    stage_max,
)
from evaluation.outputs.audio_metrics import JOB_KIND as MEASURE_AUDIO_JOB
from evaluation.outputs.audio_metrics import METRICS, MetricSummary, SystemAudioFigures, system_means
from evaluation.outputs.models import ModelOutput, System

# The pure modules' own top-two marking and Table-8 counting, applied here to figures grouped by
# the database, so the two paths cannot drift apart.
from evaluation.results.leaderboard import (
    COLUMNS,
    SCENARIO_COLUMNS,
    Cell,
    Leaderboard,
    LeaderboardRow,
    all_average,
    column_expectations,
    mark_top_two,
    response_average,
    with_expectations,
)
from evaluation.results.propagation import ErrorPropagation, propagation
from webapp.archive import archived_note
from webapp.models import Job

DEFAULT_CORRECT_THRESHOLD = 0.6
PERCEPTION_STAGES = (PERCEPTION, SHIFT_PERCEPTION)
CATEGORY_ORDER = [value for value, _ in System.Category.choices]

# The item sets results are shown for: single-turn EchoEval (items in no dialogue, the paper's
# benchmark and the default) or the user turns of dialogues.
SINGLE, DIALOGUES = "single", "dialogues"
ITEM_SETS = {SINGLE: "Single-turn EchoEval", DIALOGUES: "Dialogues (per turn)"}


def in_item_set(item_set: str, item: str = "output__item") -> Q:
    """Return the filter keeping the rows whose item (reached by `item`; "" on items) belongs to the
    set. An item whose recording's speaker withdrew consent to research evaluation belongs to none
    (`TakeQuerySet.consented_for`): every figure built on the set leaves it out."""
    if item_set not in ITEM_SETS:
        raise ValueError(f"unknown item set {item_set!r}; expected one of {', '.join(ITEM_SETS)}")
    prefix = f"{item}__" if item else ""
    consented = recording_consented_for(RESEARCH_EVALUATION, item)
    if item_set == DIALOGUES:
        return Q(**{f"{prefix}dialogue__isnull": False}) & consented
    # EchoMind's deliveries are items in no dialogue but no part of EchoEval: their own set.
    return Q(**{f"{prefix}dialogue__isnull": True}) & ~Q(**{f"{prefix}split": Split.ECHOMIND}) & consented


def default_judge_config() -> JudgeConfig | None:
    """Return the judge configuration whose judgements are shown when none is chosen (the latest used)."""
    latest = Judgement.objects.order_by("-pk").values_list("judge_config_id", flat=True).first()
    if latest is not None:
        return JudgeConfig.objects.filter(pk=latest).first()
    return JudgeConfig.objects.order_by("-created_at").first()


def archived_outputs_note(benchmark_version: str) -> str:
    """Return what the leaderboard says of the version's archived outputs (“3 archived, not counted”)."""
    every = ModelOutput.objects.filter(benchmark_version=benchmark_version)
    return archived_note(every.count(), ModelOutput.objects.for_version(benchmark_version).count())


def systems_for(benchmark_version: str, item_set: str | None = None) -> list[System]:
    """Return the systems with outputs for a version (in the item set, when one is given), in the
    paper's order: category, then name."""
    outputs = ModelOutput.objects.for_version(benchmark_version)
    if item_set is not None:
        outputs = outputs.filter(in_item_set(item_set, "item"))
    systems = System.objects.filter(pk__in=outputs.values("system_id"))
    return sorted(systems, key=lambda system: (CATEGORY_ORDER.index(system.category), system.name.lower()))


def judgements_in_set(
    benchmark_version: str, judge_config: JudgeConfig, item_set: str
) -> QuerySet[Judgement]:
    """Return one judge's judgements of a version's outputs for the items of one set."""
    # order_by(): the model's default ordering would otherwise join the GROUP BY.
    return (
        Judgement.objects.by_judge(judge_config, benchmark_version).filter(in_item_set(item_set)).order_by()
    )


def expected_item_rows(benchmark_version: str, judge_config: JudgeConfig, item_set: str) -> QuerySet[Item]:
    """Return the items every system of a version is expected to answer (N of every results figure):
    the items of the set that some system has an output for and that can be judged (they have a
    current gold reference, or this judge has judged them)."""
    outputs = ModelOutput.objects.for_version(benchmark_version).order_by()
    judged = judgements_in_set(benchmark_version, judge_config, item_set).values("output__item_id")
    return (
        Item.objects.in_use()
        .filter(in_item_set(item_set, ""), pk__in=outputs.values("item_id"))
        .filter(Q(GoldReference.objects.current_exists("pk")) | Q(pk__in=judged))
        .order_by()
    )


def expected_items(benchmark_version: str, judge_config: JudgeConfig, item_set: str) -> dict[str, int]:
    """Return the number of expected items per scenario (`expected_item_rows`), one query."""
    rows = expected_item_rows(benchmark_version, judge_config, item_set)
    return dict(rows.values_list("scenario").annotate(n=Count("pk")))


# --- Table 2 --------------------------------------------------------------------------------------


@dataclass
class _Tally:
    n_valid: int = 0
    n_excluded: int = 0
    total: float = 0.0

    def add(self, other: _Tally) -> None:
        self.n_valid += other.n_valid
        self.n_excluded += other.n_excluded
        self.total += other.total

    def cell(self) -> Cell:
        return Cell(self.total / self.n_valid if self.n_valid else None, self.n_valid, self.n_excluded)


@dataclass(frozen=True)
class ResultsLeaderboard:
    table: Leaderboard  # rows named by system name
    systems: list[System]  # in row order
    judgements: int = 0  # stored by this judge for this version, errors included

    def rows_with_systems(self) -> list[tuple[System, LeaderboardRow]]:
        return list(zip(self.systems, self.table.rows, strict=True))


def leaderboard(
    benchmark_version: str, judge_config: JudgeConfig, item_set: str = SINGLE
) -> ResultsLeaderboard:
    """Return Table 2 for a benchmark version as judged by one judge configuration (one grouped query),
    over single-turn EchoEval unless another item set is asked for."""
    systems = systems_for(benchmark_version, item_set)
    groups = (
        judgements_in_set(benchmark_version, judge_config, item_set)
        .values_list("output__system_id", "output__item__scenario", "stage")
        .annotate(n_valid=Count("score"), n_all=Count("pk"), total=Sum("score"))
    )
    tallies: dict[int, dict[tuple[str, str], _Tally]] = defaultdict(dict)
    judgements = 0
    for system_id, scenario, stage, n_valid, n_all, total in groups:
        tallies[system_id][(scenario, stage)] = _Tally(n_valid, n_all - n_valid, float(total or 0.0))
        judgements += n_all
    expected = column_expectations(expected_items(benchmark_version, judge_config, item_set))
    rows = [
        LeaderboardRow(system.name, with_expectations(_cells(tallies.get(system.pk, {})), expected))
        for system in systems
    ]
    return ResultsLeaderboard(Leaderboard(columns=COLUMNS, rows=mark_top_two(rows)), systems, judgements)


def _cells(groups: dict[tuple[str, str], _Tally]) -> dict[str, Cell]:
    """Return one system's Table-2 cells from its (scenario, stage) tallies, by the rules of
    evaluation.results.leaderboard: pooled perception average, response = content + audio, All = mean."""

    def pooled(keep: Iterable[tuple[str, str]]) -> _Tally:
        tally = _Tally()
        for key in keep:
            tally.add(groups[key])
        return tally

    cells = {
        column: pooled(key for key in groups if key[0] == scenario and key[1] in PERCEPTION_STAGES).cell()
        for scenario, column in SCENARIO_COLUMNS.items()
    }
    cells["perception_avg"] = pooled(key for key in groups if key[1] in PERCEPTION_STAGES).cell()
    for column, stage in (
        ("reasoning_avg", REASONING),
        ("response_content", RESPONSE_CONTENT),
        ("response_audio", RESPONSE_AUDIO),
    ):
        cells[column] = pooled(key for key in groups if key[1] == stage).cell()
    content, audio = cells["response_content"], cells["response_audio"]
    cells["response_avg"] = Cell(
        response_average(content.value, audio.value),
        content.n_valid + audio.n_valid,
        content.n_excluded + audio.n_excluded,
    )
    stage_cells = (cells["perception_avg"], cells["reasoning_avg"], cells["response_avg"])
    cells["all_avg"] = Cell(
        all_average(*(cell.value for cell in stage_cells)),
        sum(cell.n_valid for cell in stage_cells),
        sum(cell.n_excluded for cell in stage_cells),
    )
    return cells


def excluded_by_system(board: ResultsLeaderboard) -> dict[str, int]:
    """Return each system's number of judge errors left out of its averages (every stage)."""
    return {row.system: excluded_of(row) for row in board.table.rows}


def excluded_of(row: LeaderboardRow) -> int:
    """Return the judge errors left out of one leaderboard row's averages (every stage)."""
    return sum(row.cells[key].n_excluded for key in ("perception_avg", "reasoning_avg", "response_avg"))


# --- Objective response-audio metrics, beside the judges' Audio ---------------------------------


@dataclass(frozen=True)
class ObjectiveRow:
    system: System
    judges_audio: Cell  # Table 2's Response Audio: the judge's 1-5 score of the same outputs
    figures: SystemAudioFigures

    def values(self) -> list[float | None]:
        """Return the means in `METRICS` order."""
        return [self.figures.means[metric.key] for metric in METRICS]

    def summaries(self) -> list[MetricSummary]:
        """Return each metric's mean, interval and n in `METRICS` order."""
        return [self.figures.summaries[metric.key] for metric in METRICS]


def objective_rows(
    board: ResultsLeaderboard, benchmark_version: str, item_set: str = SINGLE
) -> list[ObjectiveRow]:
    """Return, per leaderboard row, the judges' Audio score and the measured objective metrics of
    the same system's outputs in the same item set."""
    figures = system_means(
        benchmark_version, in_item_set(item_set, "item"), [system.pk for system in board.systems]
    )
    return [
        ObjectiveRow(system, row.cells["response_audio"], figures[system.pk])
        for system, row in board.rows_with_systems()
    ]


def last_audio_measurement(benchmark_version: str) -> Job | None:
    """Return the latest measure_response_audio job of a benchmark version."""
    return (
        Job.objects.filter(kind=MEASURE_AUDIO_JOB, parameters__benchmark_version=benchmark_version)
        .order_by("-pk")
        .first()
    )


# --- Table 8 --------------------------------------------------------------------------------------


def error_propagation_table(
    benchmark_version: str,
    judge_config: JudgeConfig,
    threshold: float = DEFAULT_CORRECT_THRESHOLD,
    item_set: str = SINGLE,
) -> list[tuple[System, ErrorPropagation]]:
    """Return Table 8 per system (single-turn EchoEval unless another item set is asked for): stage
    scores pivoted per output in SQL, then counted."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError("threshold is a share of the stage maximum, in (0, 1]")
    per_output = (
        judgements_in_set(benchmark_version, judge_config, item_set)
        .filter(stage__in=[*PERCEPTION_STAGES, REASONING, RESPONSE_CONTENT])
        .values("output_id", "output__system_id")
        .annotate(
            perception=Max("score", filter=Q(stage__in=PERCEPTION_STAGES)),
            reasoning=Max("score", filter=Q(stage=REASONING)),
            content=Max("score", filter=Q(stage=RESPONSE_CONTENT)),
        )
        .values_list("output__system_id", "perception", "reasoning", "content")
    )
    complete: dict[int, list[tuple[bool, bool, bool]]] = defaultdict(list)
    excluded: dict[int, int] = defaultdict(int)
    maxima = (stage_max(PERCEPTION), stage_max(REASONING), stage_max(RESPONSE_CONTENT))
    for system_id, *scores in per_output:
        # As in evaluation.results.leaderboard: an output missing a chain stage, or with a judge error on
        # one, is left out and counted.
        if any(score is None for score in scores):
            excluded[system_id] += 1
            continue
        perception_ok, reasoning_ok, response_ok = (
            score / maximum >= threshold for score, maximum in zip(scores, maxima, strict=True)
        )
        complete[system_id].append((perception_ok, reasoning_ok, response_ok))
    n_expected = sum(expected_items(benchmark_version, judge_config, item_set).values())
    return [
        (system, propagation(system.name, threshold, complete[system.pk], excluded[system.pk], n_expected))
        for system in systems_for(benchmark_version, item_set)
        if system.pk in complete or system.pk in excluded
    ]
