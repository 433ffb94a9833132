"""Pages of results (admins: they name the systems): leaderboard, error propagation, item
drill-downs and the judge-human agreement."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.gold.access import gold_refusal, gold_withheld_items
from annotation.recording.models import Item
from evaluation.judging.dialogues.context import histories_for
from evaluation.judging.models import JudgeConfig
from evaluation.judging.rubrics import PERCEPTION, REASONING, RESPONSE_CONTENT, stage_max
from evaluation.outputs.access import blind_audio_url, query_audio_url
from evaluation.outputs.audio_metrics import JOB_KIND as MEASURE_AUDIO_JOB
from evaluation.outputs.audio_metrics import METRICS, current_metrics, output_figures
from evaluation.outputs.forms import OutputFiguresForm
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, ModelOutput, System
from evaluation.results import reports
from evaluation.results.access import item_for_admin
from evaluation.results.agreement import judge_human_agreement
from evaluation.results.dialogues.reports import ResultsDialogueBoard, dialogue_leaderboard
from evaluation.results.dialogues.scores import to_turn_csv, to_turn_latex
from evaluation.results.drilldown import item_drilldown, items_with_outputs
from evaluation.results.forms import (
    AgreementForm,
    ErrorPropagationForm,
    JudgeAuditForm,
    LeaderboardForm,
    ResultsFilterForm,
    fall_threshold_of,
    item_set_of,
)
from evaluation.results.judge_audit import AuditRefused, audit_page, start_judge_audit
from evaluation.results.leaderboard import COLUMNS, Cell, to_csv, to_latex
from evaluation.results.models import JudgeAudit
from webapp.http import StudioRequest
from webapp.jobs import start_job
from webapp.models import JobStatus
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
    form.initial.update({"version": version, "judge": judge.pk if judge else None, "set": item_set_of(form)})
    return form, version, judge


@role_required(Role.ADMIN)
@require_GET
def leaderboard(request: StudioRequest) -> HttpResponse:
    """Table 2 over valid judgements, excluded counts shown, top two marked, with a chart; for the
    dialogue set, Table 2 per turn and the dialogue-level scores."""
    form, version, judge = results_filter(request, LeaderboardForm)
    if item_set_of(form) == reports.DIALOGUES:
        return _dialogue_leaderboard(request, form, version, judge)
    del form.fields["fall_threshold"]  # a dialogue figure: nothing to set on single items
    board = reports.leaderboard(version, judge) if judge else None
    chart: dict[str, Any] = {}
    if board is not None:
        chart = {
            "labels": [row.system for row in board.table.rows],
            "series": [
                {
                    "label": label,
                    "data": [row.cells[key].value for row in board.table.rows],
                    "coverage": [row.cells[key].coverage.text for row in board.table.rows],
                    "comparable": [row.cells[key].comparable for row in board.table.rows],
                }
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
            "metrics": METRICS,
            "objective_rows": reports.objective_rows(board, version) if board else [],
            "audio_measurement": reports.last_audio_measurement(version),
            "archived_note": reports.archived_outputs_note(version),
        },
    )


@role_required(Role.ADMIN)
@require_POST
def measure_audio(request: StudioRequest) -> HttpResponse:
    """Start the job measuring every response audio of a version that has no measurement yet."""
    version = request.POST.get("version", "").strip()
    if version not in ModelOutput.objects.benchmark_versions():
        raise Http404("No outputs for that benchmark version.")
    last = reports.last_audio_measurement(version)
    if last is not None and last.status in (JobStatus.QUEUED, JobStatus.RUNNING):
        messages.info(request, f"The response audio of {version} is being measured already.")
    else:
        start_job(MEASURE_AUDIO_JOB, started_by=request.user, parameters={"benchmark_version": version})
        messages.success(
            request, f"Measuring the response audio of {version}: the table fills in as it runs."
        )
    return redirect(f"{reverse('evaluation:leaderboard')}?{urlencode({'version': version})}")


def _dialogue_leaderboard(
    request: StudioRequest, form: ResultsFilterForm, version: str, judge: JudgeConfig | None
) -> HttpResponse:
    threshold = fall_threshold_of(form)
    form.initial["fall_threshold"] = threshold
    board = dialogue_leaderboard(version, judge, threshold) if judge else None
    return render(
        request,
        "evaluation/results/leaderboard_dialogues.html",
        {
            "form": form,
            "version": version,
            "judge": judge,
            "board": board,
            "threshold": threshold,
            "columns": COLUMNS,
            "groups": _column_groups(),
            "turn_tables": _turn_tables(board) if board else [],
            "summary_rows": [
                (system, summary, [summary.fell_at.get(turn, 0) for turn in board.board.turns])
                for system, summary in board.summaries_with_systems()
            ]
            if board
            else [],
            "chart": _turn_chart(board) if board else {},
        },
    )


def _turn_tables(board: ResultsDialogueBoard) -> list[tuple[int, str, list[tuple[System, list[Cell], int]]]]:
    """Return per turn index its table id and Table-2 rows: (system, cells in column order, judge
    errors excluded)."""
    tables = []
    for turn in board.board.turns:
        rows = []
        for system, row in board.turn_rows(turn):
            rows.append((system, [row.cells[column.key] for column in COLUMNS], reports.excluded_of(row)))
        tables.append((turn, f"leaderboard-turn-{turn}", rows))
    return tables


def _turn_chart(board: ResultsDialogueBoard) -> dict[str, Any]:
    """Return the data of the score-by-turn chart: each system's All per turn index.

    A system with no overall score on any turn (its audio was not judged) draws no line: it is
    named under the chart instead, as its table rows read "-".
    """
    turns = board.board.turns
    series = [
        {
            "label": system.name,
            "data": [board.board.per_turn[turn].rows[index].cells["all_avg"].value for turn in turns],
        }
        for index, system in enumerate(board.systems)
    ]
    return {
        "labels": [f"Turn {turn}" for turn in turns],
        "series": [line for line in series if any(value is not None for value in line["data"])],
        "not_drawn": [line["label"] for line in series if all(value is None for value in line["data"])],
    }


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
    form, version, judge = results_filter(request)
    if judge is None:
        raise Http404("No judge has judged anything yet.")
    item_set = item_set_of(form)
    text = leaderboard_text(version, judge, item_set, fmt)
    content_type = "text/csv" if fmt == "csv" else "text/x-tex"
    response = HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
    suffix = "" if item_set == reports.SINGLE else f"-{item_set}"
    response["Content-Disposition"] = f'attachment; filename="leaderboard-{_safe(version)}{suffix}.{fmt}"'
    return response


def leaderboard_text(version: str, judge: JudgeConfig, item_set: str, fmt: str) -> str:
    """Return the leaderboard of an item set as CSV or LaTeX (per turn for dialogues)."""
    if item_set == reports.DIALOGUES:
        board = dialogue_leaderboard(version, judge).board
        return to_turn_csv(board) if fmt == "csv" else to_turn_latex(board)
    table = reports.leaderboard(version, judge).table
    return to_csv(table) if fmt == "csv" else to_latex(table)


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
    rows = reports.error_propagation_table(version, judge, threshold, item_set_of(form)) if judge else []
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
    items = items_with_outputs(version, judge, item_set_of(form))
    page = Paginator(items, 100).get_page(request.GET.get("page"))
    return render(
        request,
        "evaluation/results/items.html",
        {"form": form, "version": version, "judge": judge, "page": page},
    )


@role_required(Role.ADMIN)
@require_GET
def output_metrics(request: StudioRequest) -> HttpResponse:
    """Every output's measured audio figures (DNSMOS, loudness, rate, reply WER, speaker
    similarity), filtered by system and a measure's range, sorted by any measure."""
    versions = ModelOutput.objects.benchmark_versions() or [DEFAULT_BENCHMARK_VERSION]
    version = request.GET.get("version") or versions[-1]
    if version not in versions:
        raise Http404("No outputs for that benchmark version.")
    form = OutputFiguresForm(request.GET)
    chosen: dict[str, Any] = form.cleaned_data if form.is_valid() else {}
    system = chosen.get("system")
    rows = output_figures(
        version,
        system_id=system.pk if system else None,
        metric=chosen.get("metric", ""),
        low=chosen.get("low"),
        high=chosen.get("high"),
        sort=chosen.get("sort", ""),
    )
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    sortless = query.copy()
    sortless.pop("sort", None)
    return render(
        request,
        "evaluation/results/output_metrics.html",
        {
            "form": form,
            "version": version,
            "metrics": METRICS,
            "page": page,
            "rows": [(row, [getattr(row, metric.key) for metric in METRICS]) for row in page],
            "query": query.urlencode(),
            "sortless": sortless.urlencode(),
        },
    )


@role_required(Role.ADMIN)
@require_GET
def item_detail(request: StudioRequest, item_id: int) -> HttpResponse:
    """One item: every output, the gold reference and each judge's sub-scores, caps and rationale."""
    item = item_for_admin(item_id)
    # The page shows the item's gold: not to an admin still labelling the item.
    if (refusal := gold_refusal(request.user, item)) is not None:
        raise PermissionDenied(refusal)
    _, version, _judge = results_filter(request)
    gold, outputs = item_drilldown(item, version, gold_withheld_items(request.user))
    # A dialogue turn: each output beside the conversation its judge read before it.
    histories = histories_for(entry.output for entry in outputs)
    measured = {
        row.output_id: [(metric, getattr(row, metric.key)) for metric in METRICS]
        for row in current_metrics().filter(output__in=[entry.output for entry in outputs])
    }
    rows = [
        (
            entry,
            blind_audio_url(entry.output.response_audio_key, request.user),
            histories.get(entry.output.pk),
            measured.get(entry.output.pk),
        )
        for entry in outputs
    ]
    return render(
        request,
        "evaluation/results/item.html",
        {
            "item": item,
            "version": version,
            "gold": gold,
            "rows": rows,
            "recording_url": query_audio_url(item, request.user),
            "earlier_turns": Item.objects.earlier_turns(item),
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


@role_required(Role.ADMIN)
def judge_audits(request: StudioRequest) -> HttpResponse:
    """List the judge audits and start one (POST)."""
    form = JudgeAuditForm(request.POST or None, versions=ModelOutput.objects.benchmark_versions())
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            audit = start_judge_audit(
                data["judge"],
                data["version"],
                repeats=data["repeats"],
                max_outputs=data["max_outputs"],
                compare_with=list(data["compare_with"]),
                started_by=request.user,
            )
        except AuditRefused as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Auditing {audit.judge_config.name}: the page fills in as it runs.")
            return redirect("evaluation:judge_audit", audit_id=audit.pk)
    audits = JudgeAudit.objects.select_related("judge_config", "job")
    return render(request, "evaluation/results/judge_audits.html", {"form": form, "audits": audits})


@role_required(Role.ADMIN)
@require_GET
def judge_audit(request: StudioRequest, audit_id: int) -> HttpResponse:
    """One audit's figures, each with n and its 95% interval, as tables and interval charts."""
    audit = JudgeAudit.objects.select_related("judge_config", "job").filter(pk=audit_id).first()
    if audit is None:
        raise Http404("No such audit.")
    return render(request, "evaluation/results/judge_audit.html", {"audit": audit, **audit_page(audit)})
