"""Pages of the judging side: systems, output imports, judges and runs (admins); leaderboard,
error propagation, drill-down and judge-human agreement (admins); rubric scoring by hand
(evaluators, blind to the system)."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.gold.models import GoldReference
from annotation.recording.models import Item
from evaluation.judging.forms import (
    AgreementForm,
    ErrorPropagationForm,
    HandRubricForm,
    JudgeConfigForm,
    JudgeRunForm,
    OutputImportForm,
    ResultsFilterForm,
    RubricSampleForm,
    SystemForm,
)
from evaluation.judging.human_scoring import (
    SampleError,
    count_scored,
    draw_rubric_sample,
    next_entry,
    output_stages,
    save_hand_scores,
)
from evaluation.judging.models import (
    HumanJudgement,
    JudgeConfig,
    JudgeRun,
    RubricSample,
    RubricSampleEntry,
    Stage,
)
from evaluation.judging.rubrics import PERCEPTION, REASONING, RESPONSE_CONTENT, RubricError, stage_max
from evaluation.judging.runs import JudgeRunRefused, start_judge_run
from evaluation.outputs.importing import AudioSource, S3AudioSource, ZipAudioSource, import_outputs
from evaluation.outputs.models import ModelOutput, System
from evaluation.results import reports as results
from evaluation.results.leaderboard import COLUMNS, Cell, to_csv, to_latex
from webapp.http import StudioRequest
from webapp.roles import Role, role_required
from webapp.storage import audio_url

STAGE_LABELS = dict(Stage.choices)


# --- Access helpers -------------------------------------------------------------------------------


def _system(pk: int) -> System:
    return get_object_or_404(System, pk=pk)


def _evaluator_sample(request: StudioRequest, sample_id: int) -> RubricSample:
    """Return a sample the evaluator was invited to; others' samples do not exist for them."""
    sample = RubricSample.objects.filter(pk=sample_id, evaluators=request.user).first()
    if sample is None:
        raise Http404("No such sample.")
    return sample


def _sample_entry(sample: RubricSample, public_id: UUID) -> RubricSampleEntry:
    entry = (
        RubricSampleEntry.objects.filter(sample=sample, output__public_id=public_id)
        .select_related("output__item", "output__system")
        .first()
    )
    if entry is None:
        raise Http404("No such output in this sample.")
    return entry


# --- Systems and outputs --------------------------------------------------------------------------


@role_required(Role.ADMIN)
@require_GET
def system_list(request: StudioRequest) -> HttpResponse:
    """Every system with its output counts per benchmark version."""
    systems = System.objects.annotate(n_outputs=Count("outputs")).order_by("category", "name")
    versions: dict[int, list[tuple[str, int]]] = {}
    for system_id, version, count in (
        ModelOutput.objects.order_by()
        .values_list("system_id", "benchmark_version")
        .annotate(n=Count("pk"))
        .order_by("benchmark_version")
    ):
        versions.setdefault(system_id, []).append((version, count))
    rows = [(system, versions.get(system.pk, [])) for system in systems]
    return render(request, "evaluation/results/systems.html", {"rows": rows})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def system_create(request: StudioRequest) -> HttpResponse:
    """Register a system under evaluation."""
    form = SystemForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        system = form.save()
        messages.success(request, f"System {system.name} registered as {system.anonymous_code}.")
        return redirect("evaluation:output_import", system_id=system.pk)
    return render(request, "evaluation/results/system_form.html", {"form": form, "system": None})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def system_edit(request: StudioRequest, system_id: int) -> HttpResponse:
    """Change a system's name, category, version or text-only flag."""
    system = _system(system_id)
    form = SystemForm(request.POST or None, instance=system)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "System saved.")
        return redirect("evaluation:system_list")
    return render(request, "evaluation/results/system_form.html", {"form": form, "system": system})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def system_delete(request: StudioRequest, system_id: int) -> HttpResponse:
    """Delete a system with its outputs and judgements, after a confirmation page."""
    system = _system(system_id)
    if request.method == "POST":
        name = system.name
        system.delete()
        messages.success(request, f"System {name} and its outputs were deleted.")
        return redirect("evaluation:system_list")
    counts = {
        "outputs": system.outputs.count(),
        "judgements": system.outputs.aggregate(n=Count("judgements"))["n"],
    }
    return render(request, "evaluation/results/system_delete.html", {"system": system, "counts": counts})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def output_import(request: StudioRequest, system_id: int) -> HttpResponse:
    """Upload a system's outputs (JSONL + audio zip or S3 prefix); shows the validation report."""
    system = _system(system_id)
    form = OutputImportForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        audio: AudioSource | None = None
        try:
            if form.cleaned_data["audio_zip"]:
                audio = ZipAudioSource(form.cleaned_data["audio_zip"])
            elif form.cleaned_data["s3_prefix"]:
                audio = S3AudioSource(form.cleaned_data["s3_prefix"])
        except Exception as exc:  # a bad zip or an unreachable bucket: say which, keep the form
            form.add_error(None, f"The audio could not be opened: {type(exc).__name__}: {exc}")
        else:
            report = import_outputs(
                system,
                form.cleaned_data["benchmark_version"],
                form.cleaned_data["rows"].read(),
                audio,
                skip_invalid_rows=form.cleaned_data["skip_invalid_rows"],
            )
            if report.imported:
                messages.success(
                    request,
                    f"Imported {report.created} new, {report.updated} changed, {report.unchanged} unchanged "
                    f"and removed {report.removed} outputs of {system.name}.",
                )
    return render(
        request, "evaluation/results/output_import.html", {"system": system, "form": form, "report": report}
    )


# --- Judges and runs ------------------------------------------------------------------------------


@role_required(Role.ADMIN)
@require_GET
def judge_config_list(request: StudioRequest) -> HttpResponse:
    """Judge configurations with how many judgements each has made."""
    configs = JudgeConfig.objects.annotate(
        n_judgements=Count("judgements"), n_errors=Count("judgements", filter=~Q(judgements__error_kind=""))
    )
    return render(request, "evaluation/results/judge_configs.html", {"configs": configs})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def judge_config_edit(request: StudioRequest, config_id: int | None = None) -> HttpResponse:
    """Create (no id) or change a judge configuration."""
    config = get_object_or_404(JudgeConfig, pk=config_id) if config_id is not None else None
    form = JudgeConfigForm(request.POST or None, instance=config)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        messages.success(request, f"Judge {saved.name} saved.")
        return redirect("evaluation:judge_config_list")
    return render(request, "evaluation/results/judge_config_form.html", {"form": form, "config": config})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def judge_run_list(request: StudioRequest) -> HttpResponse:
    """Judge runs, newest first, and the form that starts one."""
    form = JudgeRunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            run = start_judge_run(
                form.cleaned_data["system"],
                form.cleaned_data["benchmark_version"],
                form.cleaned_data["judge_config"],
                started_by=request.user,
                retry_errors=form.cleaned_data["retry_errors"],
            )
        except JudgeRunRefused as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("evaluation:judge_run_detail", run_id=run.pk)
    runs = JudgeRun.objects.select_related("system", "judge_config", "job", "started_by")[:100]
    return render(request, "evaluation/results/judge_runs.html", {"form": form, "runs": runs})


@role_required(Role.ADMIN)
@require_GET
def judge_run_detail(request: StudioRequest, run_id: int) -> HttpResponse:
    """A run's progress bar (the job partial polls itself), its counts (polled while it runs) and its errors."""
    run = get_object_or_404(JudgeRun.objects.select_related("system", "judge_config", "job"), pk=run_id)
    judgements = run.judgements.order_by()
    counts = judgements.aggregate(
        valid=Count("pk", filter=Q(error_kind="")),
        invalid_json=Count("pk", filter=Q(error_kind="invalid_json")),
        rubric=Count("pk", filter=Q(error_kind="rubric")),
    )
    if request.htmx:
        return render(request, "evaluation/results/judge_run.html#counts", {"run": run, "counts": counts})
    errors = run.judgements.exclude(error_kind="").select_related("output__item")[:50]
    return render(
        request,
        "evaluation/results/judge_run.html",
        {"run": run, "counts": counts, "errors": errors},
    )


# --- Results --------------------------------------------------------------------------------------


def _results_filter(
    request: StudioRequest, form_class: type[ResultsFilterForm] = ResultsFilterForm
) -> tuple[ResultsFilterForm, str, JudgeConfig | None]:
    versions = results.benchmark_versions() or [results.DEFAULT_BENCHMARK_VERSION]
    form = form_class(request.GET or None, versions=versions)
    version, judge = versions[-1], None
    if form.is_valid():
        version = form.cleaned_data["version"] or version
        judge = form.cleaned_data["judge"]
    judge = judge or results.default_judge_config()
    form.initial.update({"version": version, "judge": judge.pk if judge else None})
    return form, version, judge


@role_required(Role.ADMIN)
@require_GET
def leaderboard(request: StudioRequest) -> HttpResponse:
    """Table 2 over valid judgements, excluded counts shown, top two marked, with a chart."""
    form, version, judge = _results_filter(request)
    board = results.leaderboard(version, judge) if judge else None
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


def _table_rows(board: results.ResultsLeaderboard) -> list[tuple[System, list[Cell], int]]:
    """Return (system, cells in column order, judge errors excluded) per leaderboard row."""
    excluded = results.excluded_by_system(board)
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
    _, version, judge = _results_filter(request)
    if judge is None:
        raise Http404("No judge has judged anything yet.")
    table = results.leaderboard(version, judge).table
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
    form, version, judge = _results_filter(request, ErrorPropagationForm)
    threshold = results.DEFAULT_CORRECT_THRESHOLD
    if form.is_valid() and form.cleaned_data.get("threshold"):
        threshold = form.cleaned_data["threshold"]
    form.initial["threshold"] = threshold
    rows = results.error_propagation_table(version, judge, threshold) if judge else []
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
    form, version, judge = _results_filter(request)
    page = Paginator(results.items_with_outputs(version, judge), 100).get_page(request.GET.get("page"))
    return render(
        request,
        "evaluation/results/items.html",
        {"form": form, "version": version, "judge": judge, "page": page},
    )


@role_required(Role.ADMIN)
@require_GET
def item_detail(request: StudioRequest, item_id: int) -> HttpResponse:
    """One item: every output, the gold reference and each judge's sub-scores, caps and rationale."""
    item = get_object_or_404(Item.objects.select_related("recording"), pk=item_id)
    _, version, _judge = _results_filter(request)
    gold, outputs = results.item_drilldown(item, version)
    recording_url = audio_url(item.recording.audio_key) if item.recording and item.recording.audio_key else ""
    rows = [
        (entry, audio_url(entry.output.response_audio_key) if entry.output.response_audio_key else "")
        for entry in outputs
    ]
    return render(
        request,
        "evaluation/results/item.html",
        {"item": item, "version": version, "gold": gold, "rows": rows, "recording_url": recording_url},
    )


# --- Human rubric scoring: admin side -------------------------------------------------------------


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def rubric_sample_list(request: StudioRequest) -> HttpResponse:
    """Rubric samples with their progress, and the form that draws a new one."""
    form = RubricSampleForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            sample = draw_rubric_sample(
                name=data["name"],
                benchmark_version=data["benchmark_version"],
                n_items=data["n_items"],
                evaluators=data["evaluators"],
                systems=list(data["systems"]),
                seed=data["seed"],
                created_by=request.user,
            )
        except SampleError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Sample {sample.name} drawn with {sample.entries.count()} outputs.")
            return redirect("evaluation:rubric_sample_detail", sample_id=sample.pk)
    samples = RubricSample.objects.annotate(
        n_entries=Count("entries", distinct=True), n_evaluators=Count("evaluators", distinct=True)
    )
    return render(request, "evaluation/results/rubric_samples.html", {"form": form, "samples": samples})


@role_required(Role.ADMIN)
@require_GET
def rubric_sample_detail(request: StudioRequest, sample_id: int) -> HttpResponse:
    """A sample's progress per evaluator."""
    sample = get_object_or_404(RubricSample, pk=sample_id)
    n_entries = sample.entries.count()
    outputs = sample.entries.values("output_id")
    progress = [
        (
            evaluator,
            HumanJudgement.objects.filter(evaluator=evaluator, output_id__in=outputs)
            .values("output_id")
            .distinct()
            .count(),
        )
        for evaluator in sample.evaluators.order_by("username")
    ]
    return render(
        request,
        "evaluation/results/rubric_sample.html",
        {"sample": sample, "n_entries": n_entries, "progress": progress},
    )


@role_required(Role.ADMIN)
@require_GET
def agreement(request: StudioRequest) -> HttpResponse:
    """Table 3: judge-human Spearman's rho per stage with bootstrap confidence intervals."""
    form = AgreementForm(request.GET or None)
    judge, sample = None, None
    if form.is_valid():
        judge, sample = form.cleaned_data["judge"], form.cleaned_data["sample"]
    judge = judge or results.default_judge_config()
    form.initial.update({"judge": judge.pk if judge else None})
    table = results.judge_human_agreement(judge, sample) if judge else None
    return render(
        request,
        "evaluation/results/agreement.html",
        {"form": form, "judge": judge, "sample": sample, "table": table},
    )


# --- Human rubric scoring: evaluator side (blind) -------------------------------------------------


@role_required(Role.EVALUATOR)
@require_GET
def my_rubric_samples(request: StudioRequest) -> HttpResponse:
    """The samples this evaluator was invited to, with how many outputs they have scored."""
    samples = RubricSample.objects.filter(evaluators=request.user).annotate(n_entries=Count("entries"))
    rows = [(sample, count_scored(sample, request.user)) for sample in samples]
    return render(request, "evaluation/results/my_rubric_samples.html", {"rows": rows})


@role_required(Role.EVALUATOR)
@require_GET
def rubric_next(request: StudioRequest, sample_id: int) -> HttpResponse:
    """Send the evaluator to the next output they have not scored, or back to their samples."""
    sample = _evaluator_sample(request, sample_id)
    entry = next_entry(sample, request.user)
    if entry is None:
        messages.success(request, "You have scored every output of this sample. Thank you.")
        return redirect("evaluation:my_rubric_samples")
    return redirect("evaluation:rubric_score", sample_id=sample.pk, public_id=entry.output.public_id)


@role_required(Role.EVALUATOR)
@require_http_methods(["GET", "POST"])
def rubric_score(request: StudioRequest, sample_id: int, public_id: UUID) -> HttpResponse:
    """Score one output by hand with the stage rubrics; nothing on the page names the system."""
    sample = _evaluator_sample(request, sample_id)
    entry = _sample_entry(sample, public_id)
    output = entry.output
    stages = output_stages(output)
    existing = {
        judgement.stage: judgement
        for judgement in HumanJudgement.objects.filter(output=output, evaluator=request.user)
    }
    initial: dict[str, Any] = {}
    for stage, judgement in existing.items():
        initial.update({f"{stage}__{name}": value for name, value in judgement.subscores.items()})
        initial[f"{stage}__flags"] = judgement.flags
        initial["comment"] = judgement.comment
    form = HandRubricForm(request.POST or None, initial=initial, stages=stages, scenario=output.item.scenario)
    if request.method == "POST" and form.is_valid():
        try:
            save_hand_scores(request.user, output, form.hand_scores(), form.cleaned_data["comment"])
        except (RubricError, SampleError) as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("evaluation:rubric_next", sample_id=sample.pk)
    gold = GoldReference.objects.filter(item_id=output.item_id, is_current=True).first()
    recording = output.item.recording
    n_entries = sample.entries.count()
    context = {
        "sample": sample,
        "output": output,
        "item": output.item,
        "gold": gold,
        "gold_json": json.dumps(
            {"perception": gold.perception, "tom": gold.tom}, indent=2, ensure_ascii=False
        )
        if gold
        else "",
        "form": form,
        "stage_labels": STAGE_LABELS,
        "response_audio_url": audio_url(output.response_audio_key) if output.response_audio_key else "",
        "recording_url": audio_url(recording.audio_key) if recording and recording.audio_key else "",
        "position": entry.position + 1,
        "n_entries": n_entries,
        "n_done": count_scored(sample, request.user),
        "scored": bool(existing),
        "post_url": reverse("evaluation:rubric_score", args=[sample.pk, output.public_id]),
    }
    return render(request, "evaluation/results/rubric_score.html", context)


@role_required(Role.ADMIN)
@require_POST
def judge_run_rerun(request: StudioRequest, run_id: int) -> HttpResponse:
    """Start the same run again, optionally judging its stored errors afresh."""
    run = get_object_or_404(JudgeRun.objects.select_related("system", "judge_config"), pk=run_id)
    try:
        new_run = start_judge_run(
            run.system,
            run.benchmark_version,
            run.judge_config,
            started_by=request.user,
            retry_errors=request.POST.get("retry_errors") == "1",
        )
    except JudgeRunRefused as exc:
        messages.error(request, str(exc))
        return redirect("evaluation:judge_run_detail", run_id=run.pk)
    return redirect("evaluation:judge_run_detail", run_id=new_run.pk)
