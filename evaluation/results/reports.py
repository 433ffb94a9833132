"""Results queries: the Table-2 leaderboard, Table-8 error propagation, item drill-downs and the
Table-3 judge-human agreement, computed from stored judgements.

The database does the aggregation (a few grouped queries, however many scores are stored); the
rules of Tables 2 and 8 are those of `evaluation.results.leaderboard`, applied to the grouped figures:
means over valid judgements only, judge errors counted as excluded.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection
from django.db.models import Avg, Count, Max, Q, QuerySet, Sum

from annotation.gold.models import GoldReference
from annotation.recording.models import Item
from evaluation.judging.models import HumanJudgement, JudgeConfig, Judgement, RubricSample
from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
    stage_max,
)
from evaluation.outputs.models import ModelOutput, System

# The private helpers are the pure module's own top-two marking and Table-8 counting, applied here
# to figures grouped by the database so the two paths cannot drift apart.
from evaluation.results.leaderboard import (
    COLUMNS,
    SCENARIO_COLUMNS,
    Cell,
    ErrorPropagation,
    Leaderboard,
    LeaderboardRow,
    _mark_top_two,
    _propagation,
)
from webapp.lib.stats import CorrelationCI, spearman_with_bootstrap_ci

DEFAULT_BENCHMARK_VERSION = "echoeval-v1"
DEFAULT_CORRECT_THRESHOLD = 0.6
PERCEPTION_STAGES = (PERCEPTION, SHIFT_PERCEPTION)
CATEGORY_ORDER = [value for value, _ in System.Category.choices]


def refresh_planner_statistics() -> None:
    """Update the database's statistics of the output and judgement tables after bulk writes.

    Right after tens of thousands of rows arrive, PostgreSQL still believes the tables are nearly
    empty and joins them with nested loops: the leaderboard query took 44 s instead of tens of ms
    in bench/leaderboard.py until the tables were analysed. Autovacuum would catch up within
    minutes; a judge run or an import does it at once (ANALYZE samples, it does not scan).
    """
    tables = [ModelOutput._meta.db_table, Judgement._meta.db_table]
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


def benchmark_versions() -> list[str]:
    """Return every benchmark version that has outputs, newest name last."""
    # order_by(): the default ordering (system, item) would otherwise join the DISTINCT.
    return sorted(ModelOutput.objects.order_by().values_list("benchmark_version", flat=True).distinct())


def default_judge_config() -> JudgeConfig | None:
    """Return the judge configuration whose judgements are shown when none is chosen (the latest used)."""
    latest = Judgement.objects.order_by("-pk").values_list("judge_config_id", flat=True).first()
    if latest is not None:
        return JudgeConfig.objects.filter(pk=latest).first()
    return JudgeConfig.objects.order_by("-created_at").first()


def systems_for(benchmark_version: str) -> list[System]:
    """Return the systems with outputs for a version, in the paper's order: category, then name."""
    systems = System.objects.filter(
        pk__in=ModelOutput.objects.filter(benchmark_version=benchmark_version).values("system_id")
    )
    return sorted(systems, key=lambda system: (CATEGORY_ORDER.index(system.category), system.name.lower()))


def _judgements(benchmark_version: str, judge_config: JudgeConfig) -> QuerySet[Judgement]:
    # order_by(): the model's default ordering would otherwise join the GROUP BY.
    return Judgement.objects.filter(
        judge_config=judge_config, output__benchmark_version=benchmark_version
    ).order_by()


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

    def rows_with_systems(self) -> list[tuple[System, LeaderboardRow]]:
        return list(zip(self.systems, self.table.rows, strict=True))


def leaderboard(benchmark_version: str, judge_config: JudgeConfig) -> ResultsLeaderboard:
    """Return Table 2 for a benchmark version as judged by one judge configuration (one grouped query)."""
    systems = systems_for(benchmark_version)
    groups = (
        _judgements(benchmark_version, judge_config)
        .values_list("output__system_id", "output__item__scenario", "stage")
        .annotate(n_valid=Count("score"), n_all=Count("pk"), total=Sum("score"))
    )
    tallies: dict[int, dict[tuple[str, str], _Tally]] = defaultdict(dict)
    for system_id, scenario, stage, n_valid, n_all, total in groups:
        tallies[system_id][(scenario, stage)] = _Tally(n_valid, n_all - n_valid, float(total or 0.0))
    rows = [LeaderboardRow(system.name, _cells(tallies.get(system.pk, {}))) for system in systems]
    return ResultsLeaderboard(Leaderboard(columns=COLUMNS, rows=_mark_top_two(rows)), systems)


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
    response_value = None
    if content.value is not None:
        response_value = content.value if audio.value is None else content.value + audio.value
    cells["response_avg"] = Cell(
        response_value, content.n_valid + audio.n_valid, content.n_excluded + audio.n_excluded
    )
    stage_cells = (cells["perception_avg"], cells["reasoning_avg"], cells["response_avg"])
    values = [cell.value for cell in stage_cells if cell.value is not None]
    cells["all_avg"] = Cell(
        sum(values) / 3 if len(values) == 3 else None,
        sum(cell.n_valid for cell in stage_cells),
        sum(cell.n_excluded for cell in stage_cells),
    )
    return cells


def excluded_by_system(board: ResultsLeaderboard) -> dict[str, int]:
    """Return each system's number of judge errors left out of its averages (every stage)."""
    return {
        row.system: sum(
            row.cells[key].n_excluded for key in ("perception_avg", "reasoning_avg", "response_avg")
        )
        for row in board.table.rows
    }


# --- Table 8 --------------------------------------------------------------------------------------


def error_propagation_table(
    benchmark_version: str, judge_config: JudgeConfig, threshold: float = DEFAULT_CORRECT_THRESHOLD
) -> list[tuple[System, ErrorPropagation]]:
    """Return Table 8 per system: stage scores pivoted per output in SQL, then counted."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError("threshold is a share of the stage maximum, in (0, 1]")
    per_output = (
        _judgements(benchmark_version, judge_config)
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
    return [
        (system, _propagation(system.name, threshold, complete[system.pk], excluded[system.pk]))
        for system in systems_for(benchmark_version)
        if system.pk in complete or system.pk in excluded
    ]


# --- Drill-down -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputJudgements:
    output: ModelOutput
    by_stage: list[tuple[str, list[Judgement]]]  # stage label, judgements of every judge


def item_drilldown(item: Item, benchmark_version: str) -> tuple[GoldReference | None, list[OutputJudgements]]:
    """Return the item's current gold reference and every system's output with all judges' verdicts."""
    gold = GoldReference.objects.filter(item=item, is_current=True).first()
    outputs = (
        ModelOutput.objects.filter(item=item, benchmark_version=benchmark_version)
        .select_related("system")
        .order_by("system__name")
    )
    judgements: dict[int, list[Judgement]] = defaultdict(list)
    for judgement in (
        Judgement.objects.filter(output__in=outputs)
        .select_related("judge_config")
        .order_by("judge_config__name")
    ):
        judgements[judgement.output_id].append(judgement)
    labels = dict(Judgement._meta.get_field("stage").choices or [])
    result = []
    for output in outputs:
        stages: dict[str, list[Judgement]] = defaultdict(list)
        for judgement in judgements[output.pk]:
            stages[judgement.stage].append(judgement)
        order = [PERCEPTION, SHIFT_PERCEPTION, REASONING, RESPONSE_CONTENT, RESPONSE_AUDIO]
        result.append(
            OutputJudgements(
                output, [(str(labels[stage]), stages[stage]) for stage in order if stage in stages]
            )
        )
    return gold, result


def items_with_outputs(benchmark_version: str, judge_config: JudgeConfig | None) -> QuerySet[Item]:
    """Return the items that have outputs for a version, with output and judge-error counts."""
    error_filter = Q(model_outputs__benchmark_version=benchmark_version) & ~Q(
        model_outputs__judgements__error_kind=""
    )
    if judge_config is not None:
        error_filter &= Q(model_outputs__judgements__judge_config=judge_config)
    return (
        Item.objects.filter(model_outputs__benchmark_version=benchmark_version)
        .annotate(
            n_outputs=Count(
                "model_outputs", filter=Q(model_outputs__benchmark_version=benchmark_version), distinct=True
            ),
            n_errors=Count("model_outputs__judgements", filter=error_filter, distinct=True),
        )
        .order_by("external_id")
    )


# --- Table 3 --------------------------------------------------------------------------------------

# Table 3's dimensions: shift perception counts as perception; content and audio are both response.
AGREEMENT_DIMENSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Perception", PERCEPTION_STAGES),
    ("Reasoning", (REASONING,)),
    ("Response", (RESPONSE_CONTENT, RESPONSE_AUDIO)),
)
AGREEMENT_STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Perception", (PERCEPTION,)),
    ("Shift perception", (SHIFT_PERCEPTION,)),
    ("Reasoning", (REASONING,)),
    ("Response content", (RESPONSE_CONTENT,)),
    ("Response audio", (RESPONSE_AUDIO,)),
)


@dataclass(frozen=True)
class AgreementRow:
    label: str
    n: int
    correlation: CorrelationCI | None
    note: str = ""  # why there is no correlation


@dataclass(frozen=True)
class AgreementTable:
    dimensions: list[AgreementRow]
    all_average: float | None  # Table 3's "All (Avg.)": the mean of the dimensions' rho
    by_stage: list[AgreementRow]
    n_human_scores: int


def judge_human_agreement(
    judge_config: JudgeConfig, sample: RubricSample | None = None, n_boot: int = 2000
) -> AgreementTable:
    """Return Spearman's rho (bootstrap 95% CI) between human rubric scores (averaged over the
    evaluators of an output's stage) and the judge's valid scores of the same output and stage."""
    human = HumanJudgement.objects.order_by()
    if sample is not None:
        human = human.filter(output__in=sample.entries.values("output_id"))
    human_means = {
        (output_id, stage): float(mean)
        for output_id, stage, mean in human.values_list("output_id", "stage").annotate(mean=Avg("score"))
    }
    judge_scores = {
        (output_id, stage): float(score or 0.0)  # never None: filtered on score__isnull=False
        for output_id, stage, score in Judgement.objects.filter(
            judge_config=judge_config,
            score__isnull=False,
            output_id__in={output_id for output_id, _ in human_means},
        ).values_list("output_id", "stage", "score")
    }
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key, human_score in human_means.items():
        if key in judge_scores:
            pairs[key[1]].append((judge_scores[key], human_score))

    def row(label: str, stages: Sequence[str]) -> AgreementRow:
        joined = [pair for stage in stages for pair in pairs[stage]]
        return _agreement_row(label, joined, n_boot)

    dimensions = [row(label, stages) for label, stages in AGREEMENT_DIMENSIONS]
    rhos = [dimension.correlation.rho for dimension in dimensions if dimension.correlation is not None]
    return AgreementTable(
        dimensions=dimensions,
        all_average=sum(rhos) / len(rhos) if len(rhos) == len(dimensions) else None,
        by_stage=[row(label, stages) for label, stages in AGREEMENT_STAGES],
        n_human_scores=human.count(),
    )


def _agreement_row(label: str, pairs: Sequence[tuple[float, float]], n_boot: int) -> AgreementRow:
    if len(pairs) < 3:
        return AgreementRow(label, len(pairs), None, "needs at least 3 outputs scored by both")
    judge, human = [pair[0] for pair in pairs], [pair[1] for pair in pairs]
    if len(set(judge)) < 2 or len(set(human)) < 2:
        return AgreementRow(label, len(pairs), None, "one side gave every output the same score")
    try:
        correlation = spearman_with_bootstrap_ci(judge, human, n_boot=n_boot)
    except ValueError as exc:
        return AgreementRow(label, len(pairs), None, str(exc))
    if math.isnan(correlation.rho):
        return AgreementRow(label, len(pairs), None, "undefined")
    return AgreementRow(label, len(pairs), correlation)
