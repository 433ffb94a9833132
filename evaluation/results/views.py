"""Pages of results (admins: they name the systems): leaderboard, error propagation, item
drill-downs and the judge-human agreement."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluation.judging.models import JudgeConfig
from evaluation.judging.rubrics import PERCEPTION, REASONING, RESPONSE_CONTENT, stage_max
from evaluation.outputs.access import blind_audio_url, query_audio_url
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, ModelOutput, System
from evaluation.results import reports
from evaluation.results.access import item_for_admin
from evaluation.results.agreement import judge_human_agreement
from evaluation.results.drilldown import item_drilldown, items_with_outputs
from evaluation.results.forms import AgreementForm, ErrorPropagationForm, ResultsFilterForm
from evaluation.results.leaderboard import COLUMNS, Cell, to_csv, to_latex
from webapp.http import StudioRequest
from webapp.roles import Role, role_required


def results_filter(
    request: StudioRequest, form_class: type[ResultsFilterForm] = ResultsFilterForm
) -> tuple[ResultsFilterForm, str, JudgeConfig | None]:
    versions = ModelOutput.objects.benchmark_versions() or [DEFAULT_BENCHMARK_VERSION]
    form = form_class(request.GET or None, versions=versions)
    version, judge = versions[-1], None
    if form.is_valid():
        version = form.cleaned_data["version"] or version
        judge = form.cleaned_data["judge"]
    judge = judge or reports.default_judge_config()
    form.initial.update({"version": version, "judge": judge.pk if judge else None})
    return form, version, judge


@role_required(Role.ADMIN)
@require_GET
def leaderboard(request: StudioRequest) -> HttpResponse:
    """Table 2 over valid judgements, excluded counts shown, top two marked, with a chart."""
    form, version, judge = results_filter(request)
    board = reports.leaderboard(version, judge) if judge else None
    chart: dict[str, Any] = {}
    if board is not None:
        chart = {
            "labels": [row.system for row in board.table.rows],
            "series": [
                {"label": label, "data": [row.cells[key].value for row in board.table.rows]}
                for key, label in (
                    ("perception_avg", "Perception"),
                    ("reasoning_avg", "Reasoning"),
                    ("response_avg", "Response"),
                    ("all_avg", "All"),
                )
            ],
        }
    return render(
        request,
        "evaluation/results/leaderboard.html",
        {
            "form": form,
            "version": version,
            "judge": judge,
            "board": board,
            "columns": COLUMNS,
            "groups": _column_groups(),
            "table_rows": _table_rows(board) if board else [],
            "categories": dict(System.Category.choices),
            "chart": chart,
            "query": request.GET.urlencode(),
        },
    )


def _table_rows(board: reports.ResultsLeaderboard) -> list[tuple[System, list[Cell], int]]:
    """Return (system, cells in column order, judge errors excluded) per leaderboard row."""
    excluded = reports.excluded_by_system(board)
    return [
        (system, [row.cells[column.key] for column in COLUMNS], excluded[row.system])
        for system, row in board.rows_with_systems()
    ]


def _column_groups() -> list[tuple[str, int]]:
    groups: list[tuple[str, int]] = []
    for column in COLUMNS:
        if groups and groups[-1][0] == column.group:
            groups[-1] = (column.group, groups[-1][1] + 1)
        else:
            groups.append((column.group, 1))
    return groups


@role_required(Role.ADMIN)
@require_GET
def leaderboard_export(request: StudioRequest, fmt: str) -> HttpResponse:
    """The leaderboard as CSV or as a LaTeX tabular (Table 2 layout)."""
    _, version, judge = results_filter(request)
    if judge is None:
        raise Http404("No judge has judged anything yet.")
    table = reports.leaderboard(version, judge).table
    if fmt == "csv":
        response = HttpResponse(to_csv(table), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(to_latex(table), content_type="text/x-tex; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="leaderboard-{_safe(version)}.{fmt}"'
    return response


def _safe(text: str) -> str:
    return "".join(char if char.isalnum() or char in "-_." else "-" for char in text)


@role_required(Role.ADMIN)
@require_GET
def error_propagation(request: StudioRequest) -> HttpResponse:
    """Table 8 with the "correct" threshold beside it."""
    form, version, judge = results_filter(request, ErrorPropagationForm)
    threshold = reports.DEFAULT_CORRECT_THRESHOLD
    if form.is_valid() and form.cleaned_data.get("threshold"):
        threshold = form.cleaned_data["threshold"]
    form.initial["threshold"] = threshold
    rows = reports.error_propagation_table(version, judge, threshold) if judge else []
    return render(
        request,
        "evaluation/results/error_propagation.html",
        {
            "form": form,
            "version": version,
            "judge": judge,
            "rows": rows,
            "threshold": threshold,
            "minimums": [
                (label, threshold * stage_max(stage), stage_max(stage))
                for label, stage in (
                    ("perception", PERCEPTION),
                    ("reasoning", REASONING),
                    ("response content", RESPONSE_CONTENT),
                )
            ],
        },
    )


@role_required(Role.ADMIN)
@require_GET
def item_list(request: StudioRequest) -> HttpResponse:
    """Items with outputs for the version, each linking to its drill-down."""
    form, version, judge = results_filter(request)
    page = Paginator(items_with_outputs(version, judge), 100).get_page(request.GET.get("page"))
    return render(
        request,
        "evaluation/results/items.html",
        {"form": form, "version": version, "judge": judge, "page": page},
    )


@role_required(Role.ADMIN)
@require_GET
def item_detail(request: StudioRequest, item_id: int) -> HttpResponse:
    """One item: every output, the gold reference and each judge's sub-scores, caps and rationale."""
    item = item_for_admin(item_id)
    _, version, _judge = results_filter(request)
    gold, outputs = item_drilldown(item, version)
    rows = [(entry, blind_audio_url(entry.output.response_audio_key, request.user)) for entry in outputs]
    return render(
        request,
        "evaluation/results/item.html",
        {
            "item": item,
            "version": version,
            "gold": gold,
            "rows": rows,
            "recording_url": query_audio_url(item, request.user),
        },
    )


@role_required(Role.ADMIN)
@require_GET
def agreement(request: StudioRequest) -> HttpResponse:
    """Table 3: judge-human Spearman's rho per stage with bootstrap confidence intervals."""
    form = AgreementForm(request.GET or None)
    judge, sample = None, None
    if form.is_valid():
        judge, sample = form.cleaned_data["judge"], form.cleaned_data["sample"]
    judge = judge or reports.default_judge_config()
    form.initial.update({"judge": judge.pk if judge else None})
    table = judge_human_agreement(judge, sample) if judge else None
    return render(
        request,
        "evaluation/results/agreement.html",
        {"form": form, "judge": judge, "sample": sample, "table": table},
    )
