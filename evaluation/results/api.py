"""The results API (admins: results name systems): Table 2 and Table 8 as JSON, and the leaderboard
as CSV or LaTeX, with the objective response-audio metrics beside it. Every number comes from
`evaluation.results.reports`, as on the pages."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, cast

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.access import SYSTEM_ADMINS
from evaluation.outputs.audio_metrics import METRICS
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, ModelOutput, System
from evaluation.results import reports
from evaluation.results.dialogues.reports import dialogue_leaderboard
from evaluation.results.forms import (
    ErrorPropagationForm,
    LeaderboardForm,
    ResultsFilterForm,
    fall_threshold_of,
    item_set_of,
)
from evaluation.results.leaderboard import COLUMNS, Cell, LeaderboardRow
from evaluation.results.views import leaderboard_text, results_filter
from webapp.api.errors import ProblemSerializer, form_problems
from webapp.http import StudioRequest
from webapp.lib.visible import visible
from webapp.roles import HasRole

FILTER_PARAMETERS = [
    OpenApiParameter("version", str, description="Benchmark version; default: the newest with outputs"),
    OpenApiParameter(
        "judge",
        int,
        required=True,
        description="Judge configuration id (required: a script's figures must not change when a judge is added)",
    ),
    OpenApiParameter(
        "set",
        str,
        enum=list(reports.ITEM_SETS),
        description="Items: single-turn EchoEval (default) or the turns of dialogues",
    ),
]
MISSING_JUDGE = "Name the judge configuration (its id): results do not default to the newest judge here."
FALL_THRESHOLD = OpenApiParameter(
    "fall_threshold", float, description="Dialogues: a turn falls below this overall score (out of 10)"
)


class CellSerializer(serializers.Serializer[Any]):
    value = serializers.FloatField(allow_null=True, help_text="Mean score; null when nothing valid")
    n_valid = serializers.IntegerField()
    n_excluded = serializers.IntegerField(help_text="Judge errors left out of the mean")
    n_expected = serializers.IntegerField(
        help_text="N: the judgements expected of every system in this column (n_valid of n_expected)"
    )
    comparable = serializers.BooleanField(
        help_text="Judged on every expected item; a cell that is not is never marked (not ranked)"
    )
    mark = serializers.ChoiceField(choices=["best", "second"], allow_null=True)
    tied = serializers.BooleanField(help_text="The mark is shared with another system (a tie)")


class LeaderboardRowSerializer(serializers.Serializer[Any]):
    system = serializers.CharField()
    category = serializers.CharField()
    cells = serializers.DictField(child=CellSerializer(), help_text="By column key (see `columns`)")
    excluded = serializers.IntegerField(help_text="Judge errors left out, every stage")


class ColumnSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    group = serializers.CharField()
    # A declared field named like Field.label: DRF's metaclass takes it out of the class attributes.
    label = serializers.CharField()  # type: ignore[assignment]


class MetricSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    scale = serializers.CharField(help_text="What the metric's numbers mean")


class ObjectiveAudioRowSerializer(serializers.Serializer[Any]):
    system = serializers.CharField()
    judges_audio = serializers.FloatField(
        allow_null=True, help_text="Table 2's Response Audio: the judge's 1-5 score of the same outputs"
    )
    judges_audio_n_valid = serializers.IntegerField(help_text="n: valid audio judgements behind it")
    judges_audio_n_expected = serializers.IntegerField(help_text="N: audio judgements expected")
    with_audio = serializers.IntegerField(help_text="Outputs with response audio")
    measured = serializers.IntegerField(help_text="Of those, measured with their current audio")
    means = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="Metric key -> mean over the outputs it could be measured on; null when none",
    )
    intervals = serializers.DictField(
        child=serializers.DictField(),
        help_text="Metric key -> {n, mean, low, high}: the mean's 95% t interval over n outputs "
        "(null bounds with fewer than two)",
    )


class ObjectiveAudioSerializer(serializers.Serializer[Any]):
    metrics = MetricSerializer(many=True)
    rows = ObjectiveAudioRowSerializer(many=True)


class LeaderboardSerializer(serializers.Serializer[Any]):
    benchmark_version = serializers.CharField()
    judge = serializers.CharField(allow_null=True)
    judge_id = serializers.IntegerField(help_text="The judge configuration the figures come from")
    set = serializers.CharField()
    columns = ColumnSerializer(many=True)
    rows = LeaderboardRowSerializer(many=True, required=False, help_text="Single-turn set only")
    turns = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="Dialogues: {turn, rows} per turn index"
    )
    dialogues = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Dialogues: each system's dialogue-level scores",
    )
    fall_threshold = serializers.FloatField(required=False, help_text="Dialogues only")
    objective_audio = ObjectiveAudioSerializer(
        required=False,
        help_text="Single-turn set only: measured from each system's response audio, not judged",
    )


def _filtered(
    request: Request, form_class: type[ResultsFilterForm]
) -> tuple[ResultsFilterForm, str, JudgeConfig]:
    """Return the page's (form, version, judge) choice; 400 on a bad parameter or without a judge
    (the pages default to the latest judge for a reader; a script names the one it means)."""
    if not request.query_params.get("judge"):
        raise ValidationError({"judge": [MISSING_JUDGE]})
    versions = ModelOutput.objects.benchmark_versions() or [DEFAULT_BENCHMARK_VERSION]
    checked = form_class(request.query_params or None, versions=versions)
    if checked.is_bound and not checked.is_valid():
        raise ValidationError(form_problems(checked.errors))
    form, version, judge = results_filter(cast(StudioRequest, request._request), form_class)
    if judge is None:
        raise NotFound("No judge has judged anything yet.")
    return form, version, judge


def _cell(cell: Cell) -> dict[str, Any]:
    return {
        "value": cell.value,
        "n_valid": cell.n_valid,
        "n_excluded": cell.n_excluded,
        "n_expected": cell.n_expected,
        "comparable": cell.comparable,
        "mark": cell.mark,
        "tied": cell.tied,
    }


class LeaderboardView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS

    @extend_schema(
        summary="The leaderboard (Table 2); for dialogues, Table 2 per turn and dialogue-level scores",
        parameters=[*FILTER_PARAMETERS, FALL_THRESHOLD],
        responses={200: LeaderboardSerializer, 400: ProblemSerializer, 404: ProblemSerializer},
    )
    def get(self, request: Request) -> Response:
        form, version, judge = _filtered(request, LeaderboardForm)
        head = {
            "benchmark_version": version,
            "judge": judge.name,
            "judge_id": judge.pk,
            "set": item_set_of(form),
        }
        columns = [asdict(column) for column in COLUMNS]
        if item_set_of(form) == reports.DIALOGUES:
            return Response(
                {**head, "columns": columns, **_dialogue_figures(version, judge, fall_threshold_of(form))}
            )
        board = reports.leaderboard(version, judge)
        excluded = reports.excluded_by_system(board)
        rows = [_row(system, row, excluded[row.system]) for system, row in board.rows_with_systems()]
        return Response(
            {**head, "columns": columns, "rows": rows, "objective_audio": _objective_audio(board, version)}
        )


def _row(system: System, row: LeaderboardRow, excluded: int) -> dict[str, Any]:
    return {
        "system": row.system,
        "category": system.category,
        "cells": {column.key: _cell(row.cells[column.key]) for column in COLUMNS},
        "excluded": excluded,
    }


def _objective_audio(board: reports.ResultsLeaderboard, version: str) -> dict[str, Any]:
    """The leaderboard page's objective response-audio table (`reports.objective_rows`)."""
    return {
        "metrics": [asdict(metric) for metric in METRICS],
        "rows": [
            {
                "system": row.system.name,
                "judges_audio": row.judges_audio.value,
                "judges_audio_n_valid": row.judges_audio.n_valid,
                "judges_audio_n_expected": row.judges_audio.n_expected,
                "with_audio": row.figures.with_audio,
                "measured": row.figures.measured,
                "means": row.figures.means,
                "intervals": {key: asdict(summary) for key, summary in row.figures.summaries.items()},
            }
            for row in reports.objective_rows(board, version)
        ],
    }


def _dialogue_figures(version: str, judge: JudgeConfig, threshold: float) -> dict[str, Any]:
    board = dialogue_leaderboard(version, judge, threshold)
    turns = []
    for turn in board.board.turns:
        rows = []
        rows = [_row(system, row, reports.excluded_of(row)) for system, row in board.turn_rows(turn)]
        turns.append({"turn": turn, "rows": rows})
    dialogues = [
        {
            "system": system.name,
            "category": system.category,
            "n_dialogues": summary.n_dialogues,
            "n_expected": summary.n_expected,
            "mean": summary.mean,
            "n_fell": summary.n_fell,
            "share_fell": summary.share_fell,
            "fell_at": {str(turn): count for turn, count in summary.fell_at.items()},
        }
        for system, summary in board.summaries_with_systems()
    ]
    return {"fall_threshold": threshold, "turns": turns, "dialogues": dialogues}


class LeaderboardExportView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    fmt = "csv"

    @extend_schema(
        summary="The leaderboard as CSV or LaTeX",
        parameters=FILTER_PARAMETERS,
        responses={(200, "text/plain"): OpenApiResponse(OpenApiTypes.STR), 404: ProblemSerializer},
    )
    def get(self, request: Request) -> HttpResponse:
        form, version, judge = _filtered(request, ResultsFilterForm)
        text = leaderboard_text(version, judge, item_set_of(form), self.fmt)
        content_type = "text/csv" if self.fmt == "csv" else "text/x-tex"
        response = HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
        # A header holds no line break (Django refuses one: a 500) and only ASCII.
        response["X-Judge"] = visible(f"{judge.pk} {judge.name}", keep="").encode("ascii", "replace").decode()
        return response


class PropagationSerializer(serializers.Serializer[Any]):
    system = serializers.CharField()
    threshold = serializers.FloatField()
    n_items = serializers.IntegerField()
    n_items_excluded = serializers.IntegerField()
    n_expected = serializers.IntegerField(
        help_text="N: the items expected of every system (n_items of n_expected)"
    )
    comparable = serializers.BooleanField(help_text="Judged on every expected item (a judge error counts)")
    p_reasoning_given_perception = serializers.FloatField(allow_null=True)
    p_response_given_reasoning = serializers.FloatField(allow_null=True)
    cascade_error_ratio = serializers.FloatField(allow_null=True)


class ErrorPropagationView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS

    @extend_schema(
        summary="Error propagation between stages (Table 8)",
        parameters=[*FILTER_PARAMETERS, OpenApiParameter("threshold", float)],
        responses={200: PropagationSerializer(many=True), 400: ProblemSerializer, 404: ProblemSerializer},
    )
    def get(self, request: Request) -> Response:
        form, version, judge = _filtered(request, ErrorPropagationForm)
        threshold = reports.DEFAULT_CORRECT_THRESHOLD
        if form.is_valid() and form.cleaned_data.get("threshold"):
            threshold = form.cleaned_data["threshold"]
        rows = reports.error_propagation_table(version, judge, threshold, item_set_of(form))
        return Response([{**asdict(figures), "comparable": figures.comparable} for _, figures in rows])
