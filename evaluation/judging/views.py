"""Pages of the judging side: judge configurations and runs, rubric samples (admins); rubric
scoring by hand (evaluators, blind to the system)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.gold.access import WITHHELD_WHILE_LABELLING, gold_withheld_items
from annotation.gold.models import GoldReference
from annotation.labelling.comparison import readable_fields
from annotation.labelling.models import Strategy
from evaluation.judging import reports
from evaluation.judging.access import (
    entry_for_evaluator,
    judge_config_for_admin,
    judge_run_for_admin,
    readable_judgements,
    sample_for_admin,
    sample_for_evaluator,
)
from evaluation.judging.dialogues.context import histories_for
from evaluation.judging.forms import HandRubricForm, JudgeConfigForm, JudgeRunForm, RubricSampleForm
from evaluation.judging.human_scoring import SampleError, draw_rubric_sample, output_stages, save_hand_scores
from evaluation.judging.models import HumanJudgement, JudgeConfig, Judgement, JudgeRun, Stage
from evaluation.judging.rubrics import RubricError
from evaluation.judging.runs import JudgeRunRefused, start_judge_run
from evaluation.outputs.access import blind_audio_url, query_audio_url
from webapp.http import StudioRequest
from webapp.outbound import record_url_changes
from webapp.roles import Role, role_required

STAGE_LABELS = dict(Stage.choices)


# --- Judges and runs ------------------------------------------------------------------------------


@role_required(Role.ADMIN)
@require_GET
def judge_config_list(request: StudioRequest) -> HttpResponse:
    """Judge configurations with how many judgements each has made."""
    return render(request, "evaluation/results/judge_configs.html", {"configs": reports.judge_config_rows()})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def judge_config_edit(request: StudioRequest, config_id: int | None = None) -> HttpResponse:
    """Create (no id) or change a judge configuration."""
    config = judge_config_for_admin(config_id) if config_id is not None else None
    form = JudgeConfigForm(request.POST or None, instance=config)
    before = config.base_url if config is not None else None
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            saved = form.save()
            record_url_changes(
                request.user,
                f"judge {saved.name}",
                {"base_url": before} if before is not None else {},
                {"base_url": saved.base_url},
            )
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
    return render(
        request,
        "evaluation/results/judge_runs.html",
        {"form": form, "runs": runs, "has_judge": JudgeConfig.objects.exists()},
    )


@role_required(Role.ADMIN)
@require_GET
def judge_run_detail(request: StudioRequest, run_id: int) -> HttpResponse:
    """A run's progress bar (the job partial polls itself), its counts (polled while it runs) and its errors."""
    run = judge_run_for_admin(run_id)
    counts = run.counts()
    context = {
        "run": run,
        "counts": counts,
        "status": run.status(counts),
        "sentence": run.sentence(counts),
        "rerun_report": run.rerun_report(),
    }
    if request.htmx:
        return render(request, "evaluation/results/judge_run.html#counts", context)
    # The errors the run stands for, earlier runs' included: those a re-run left are its errors too.
    # A judge's raw answer and error can quote the gold it was shown: not for an admin still labelling the item.
    errors = readable_judgements(
        Judgement.objects.for_run(run).errors().select_related("output__item")[:50],
        gold_withheld_items(request.user),
    )
    return render(request, "evaluation/results/judge_run.html", {**context, "errors": errors})


@role_required(Role.ADMIN)
@require_POST
def judge_run_rerun(request: StudioRequest, run_id: int) -> HttpResponse:
    """Start the same run again, optionally judging its stored errors afresh."""
    run = judge_run_for_admin(run_id)
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
    return render(
        request,
        "evaluation/results/rubric_samples.html",
        {"form": form, "samples": reports.rubric_sample_rows()},
    )


@role_required(Role.ADMIN)
@require_GET
def rubric_sample_detail(request: StudioRequest, sample_id: int) -> HttpResponse:
    """A sample's progress per evaluator."""
    sample = sample_for_admin(sample_id)
    return render(
        request,
        "evaluation/results/rubric_sample.html",
        {
            "sample": sample,
            "n_entries": sample.entries.count(),
            "progress": reports.rubric_sample_progress(sample),
        },
    )


# --- Human rubric scoring: evaluator side (blind) -------------------------------------------------


@role_required(Role.EVALUATOR)
@require_GET
def my_rubric_samples(request: StudioRequest) -> HttpResponse:
    """The samples this evaluator was invited to, with how many outputs they have scored."""
    rows = reports.evaluator_samples(request.user)
    return render(request, "evaluation/results/my_rubric_samples.html", {"rows": rows})


@role_required(Role.EVALUATOR)
@require_GET
def rubric_next(request: StudioRequest, sample_id: int) -> HttpResponse:
    """Send the evaluator to the next output they have not scored, or back to their samples."""
    sample = sample_for_evaluator(request.user, sample_id)
    entry = sample.next_entry_for(request.user)
    if entry is None:
        messages.success(request, "You have scored every output of this sample. Thank you.")
        return redirect("evaluation:my_rubric_samples")
    return redirect("evaluation:rubric_score", sample_id=sample.pk, public_id=entry.output.public_id)


@role_required(Role.EVALUATOR)
@require_http_methods(["GET", "POST"])
def rubric_score(request: StudioRequest, sample_id: int, public_id: UUID) -> HttpResponse:
    """Score one output by hand with the stage rubrics; nothing on the page names the system."""
    sample = sample_for_evaluator(request.user, sample_id)
    entry = entry_for_evaluator(sample, public_id)
    output = entry.output
    existing = HumanJudgement.objects.by_stage_of(output, request.user)
    form = HandRubricForm(
        request.POST or None,
        initial=_initial_scores(existing.values()),
        stages=output_stages(output),
        scenario=output.item.scenario,
    )
    if request.method == "POST" and form.is_valid():
        try:
            save_hand_scores(request.user, output, form.hand_scores(), form.cleaned_data["comment"])
        except (RubricError, SampleError) as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("evaluation:rubric_next", sample_id=sample.pk)
    # The reference is the item's gold: not for an evaluator who is also still labelling the item.
    withheld = WITHHELD_WHILE_LABELLING if output.item_id in gold_withheld_items(request.user) else ""
    gold = None if withheld else GoldReference.objects.current_of(output.item_id)
    context = {
        "sample": sample,
        "output": output,
        "item": output.item,
        "gold": gold,
        "gold_withheld": withheld,
        "gold_fields": readable_fields(
            gold.perception, gold.tom, dict(Strategy.objects.values_list("slug", "name"))
        )
        if gold
        else [],
        "form": form,
        "stage_labels": STAGE_LABELS,
        "response_audio_url": blind_audio_url(output.response_audio_key, request.user),
        "recording_url": query_audio_url(output.item, request.user),
        # A dialogue turn: the conversation its judge read (the same system's earlier replies, never its name).
        "history": histories_for([output]).get(output.pk),
        "position": entry.position + 1,
        "n_entries": sample.entries.count(),
        "n_done": sample.n_scored_by(request.user),
        "scored": bool(existing),
        "post_url": reverse("evaluation:rubric_score", args=[sample.pk, output.public_id]),
    }
    return render(request, "evaluation/results/rubric_score.html", context)


def _initial_scores(saved: Iterable[HumanJudgement]) -> dict[str, Any]:
    """Return the form's initial values from the evaluator's saved stage scores (one comment for all)."""
    initial: dict[str, Any] = {}
    for judgement in saved:
        initial.update({f"{judgement.stage}__{name}": value for name, value in judgement.subscores.items()})
        initial[f"{judgement.stage}__flags"] = judgement.flags
        initial["comment"] = judgement.comment
    return initial
