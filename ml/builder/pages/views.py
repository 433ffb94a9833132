"""The spot-check queue (annotators) and the build pages (admins)."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from ml.builder.config import ConfigProblem
from ml.builder.export import exported_speech_checks, exported_statistics
from ml.builder.export_versions import BuildExport, BuildInFlight, in_flight_refusal, start_export
from ml.builder.launch import BuildRefused, check_request, default_config_text, launch
from ml.builder.models import Build, BuildSample, SpotCheck
from ml.builder.pages.access import BUILD_ROLES, SPOT_CHECK_ROLES, build_or_404, own_spot_check_or_404
from ml.builder.pages.forms import DecisionForm, DrawForm, StartBuildForm, TightenForm
from ml.builder.pages.queue import (
    DecisionProblem,
    decide,
    draw_spot_checks,
    kept_turns_of_dialogue,
    open_checks,
    removed_by_others,
    take_next,
)
from ml.builder.pages.reports import (
    acceptance_chart,
    build_outcome,
    checked_samples,
    sample_totals,
    spot_check_summary,
    stage_reports,
)
from ml.builder.pages.retune import BuildBusy, TighteningRefused, current_threshold, tighten
from ml.builder.pages.rules import REASON_STAGES, THRESHOLD_STAGES, acceptance_by_stage
from ml.builder.runner import resume_build, stopped_short
from ml.builder.stages import STAGE_TITLES
from webapp.http import StudioRequest
from webapp.roles import role_required
from webapp.storage import audio_url


@role_required(*BUILD_ROLES)
def build_list(request: StudioRequest) -> HttpResponse:
    """Every build with its size, status and spot-check progress."""
    builds = Build.objects.annotate(
        samples_planned=Count("samples", distinct=True),
        checks_drawn=Count("spot_checks", distinct=True),
        checks_decided=Count("spot_checks", filter=Q(spot_checks__submitted_at__isnull=False), distinct=True),
    ).prefetch_related("stages")[:200]
    # Each build's end in the status vocabulary of jobs over many rows (docs/jobs.md).
    rows = [(build, build_outcome(build, build.stages.all(), build.samples_planned)) for build in builds]
    return render(request, "ml/builder/builds.html", {"builds": rows})


@role_required(*BUILD_ROLES)
def start_page(request: StudioRequest) -> HttpResponse:
    """Start a build with the arguments of ``manage.py start_build``, checked by the same code."""
    form = StartBuildForm(request.POST or None, initial={"config": default_config_text()})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            checked = check_request(
                data["name"], data["config"], data["single"], data["dialogues"], data["seed"]
            )
            build = launch(checked, request.user)
        except BuildRefused as refused:
            form.add_error(None, f"Not started: {refused}.")
        else:
            messages.success(request, f"Build {build.name} started: its stages run on the Celery workers.")
            return redirect("ml:builder:build", build_id=build.pk)
    return render(request, "ml/builder/start.html", {"form": form})


@role_required(*BUILD_ROLES)
@never_cache
def build_page(request: StudioRequest, build_id: int) -> HttpResponse:
    """A build's stages (counts, drop reasons, cost, progress) and its spot-check acceptance.

    While the build runs, htmx fetches the stages table again every few seconds (``#stages``)."""
    build = build_or_404(build_id)
    checks = checked_samples(build)
    acceptance = acceptance_by_stage(checks)
    try:
        thresholds = [
            (setting, STAGE_TITLES[stage], current_threshold(build, setting))
            for setting, stage in THRESHOLD_STAGES.items()
        ]
    except ConfigProblem as problem:
        # Stored before configurations were checked on save, or written around Django admin.
        thresholds = []
        if not request.htmx:
            messages.error(
                request, f"This build's configuration cannot run: {problem}. Correct it in Django admin."
            )
    template = "ml/builder/build.html#stages" if request.htmx else "ml/builder/build.html"
    stages = stage_reports(build, acceptance)
    return render(
        request,
        template,
        {
            "build": build,
            "stages": stages,
            "outcome": build_outcome(build, [stage.row for stage in stages]),
            "totals": sample_totals(build),
            "spot": spot_check_summary(build, checks),
            "chart": acceptance_chart(acceptance),
            "thresholds": thresholds,
            "statistics": exported_statistics(build),
            "speech_checks": exported_speech_checks(build),
            "draw_form": DrawForm(),
            "tighten_form": TightenForm(),
            "exports": BuildExport.objects.filter(build=build).select_related("job", "created_by")[:20],
            "in_flight": in_flight_refusal(build),
            "resumable": stopped_short(build),
        },
    )


@role_required(*BUILD_ROLES)
@require_POST
def draw_page(request: StudioRequest, build_id: int) -> HttpResponse:
    """Send a seeded, stratified sample of the build's finished samples to the spot-check queue."""
    build = build_or_404(build_id)
    form = DrawForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errors in form.errors.values() for e in errors))
    else:
        try:
            opened = draw_spot_checks(build, **form.size())
        except BuildInFlight as refused:
            messages.error(request, f"Nothing drawn: {refused}.")
        else:
            messages.success(request, f"Sent {opened} samples to the spot-check queue.")
    return redirect("ml:builder:build", build_id=build.pk)


@role_required(*BUILD_ROLES)
@require_POST
def export_page(request: StudioRequest, build_id: int) -> HttpResponse:
    """Write a new export version with every spot-check decision made so far."""
    build = build_or_404(build_id)
    try:
        export = start_export(build, "asked for on the build page", request.user)
    except BuildInFlight as refused:
        messages.error(request, f"Not exported: {refused}.")
    else:
        messages.success(request, f"Writing export {export.label}; jobs started from now on train on it.")
    return redirect("ml:builder:build", build_id=build.pk)


@role_required(*BUILD_ROLES)
@require_POST
def resume_page(request: StudioRequest, build_id: int) -> HttpResponse:
    """Start again the first unfinished stage of a build that stopped short (``runner.stopped_short``)."""
    build = build_or_404(build_id)
    try:
        jobs = resume_build(build, request.user)
    except (BuildBusy, ConfigProblem) as refused:
        messages.error(request, f"Not resumed: {refused}.")
    else:
        if jobs:
            stage = STAGE_TITLES[jobs[0].parameters["stage"]]
            shards = f"{len(jobs)} job{'s' if len(jobs) != 1 else ''}"
            messages.success(request, f"{stage} starts again ({shards}); later stages follow.")
        else:
            messages.info(request, "Every stage of this build is done: nothing to resume.")
    return redirect("ml:builder:build", build_id=build.pk)


@role_required(*BUILD_ROLES)
@require_POST
def tighten_page(request: StudioRequest, build_id: int) -> HttpResponse:
    """Raise one filter threshold and re-run its stage and the later ones for the samples it kept."""
    build = build_or_404(build_id)
    form = TightenForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a filter and a number.")
        return redirect("ml:builder:build", build_id=build.pk)
    try:
        jobs, samples = tighten(build, form.cleaned_data["setting"], form.cleaned_data["value"], request.user)
    except (TighteningRefused, BuildBusy, ConfigProblem) as refused:
        messages.error(request, f"Not re-run: {refused}")
    else:
        stage = STAGE_TITLES[THRESHOLD_STAGES[form.cleaned_data["setting"]]]
        messages.success(
            request, f"{stage} re-runs for {samples} samples ({len(jobs)} job(s)); later stages follow."
        )
    return redirect("ml:builder:build", build_id=build.pk)


@role_required(*SPOT_CHECK_ROLES)
@never_cache
def spot_check_queue(request: StudioRequest) -> HttpResponse:
    """The builds with spot-checks waiting, and the checks this annotator has open or decided."""
    waiting = (
        Build.objects.annotate(
            unclaimed=Count(
                "spot_checks",
                filter=Q(spot_checks__annotator__isnull=True, spot_checks__submitted_at__isnull=True),
            )
        )
        .filter(unclaimed__gt=0)
        .order_by("name")
    )
    decided = SpotCheck.objects.filter(annotator=request.user, submitted_at__isnull=False).select_related(
        "build", "sample"
    )
    return render(
        request,
        "ml/builder/spot_check_queue.html",
        {
            "waiting": waiting,
            "mine": open_checks(request.user).select_related("build", "sample"),
            "decided": decided.order_by("-submitted_at")[:50],
        },
    )


@role_required(*SPOT_CHECK_ROLES)
@require_POST
def spot_check_next(request: StudioRequest) -> HttpResponse:
    """Open the annotator's next check (of one build, when the form names it)."""
    chosen = request.POST.get("build", "")
    build = build_or_404(int(chosen)) if chosen.isdigit() else None
    check = take_next(request.user, build)
    if check is None:
        messages.info(request, "No spot-check is waiting.")
        return redirect("ml:builder:spot_checks")
    return redirect("ml:builder:spot_check", check_id=check.pk)


@role_required(*SPOT_CHECK_ROLES)
@never_cache
def spot_check_page(request: StudioRequest, check_id: int) -> HttpResponse:
    """One sample to keep, fix or drop, with the earlier turns of its dialogue (a dropped turn asks
    what happens to the rest of it); any decision waits until its audio has played to the end."""
    check = own_spot_check_or_404(check_id, request.user)
    sample = check.sample
    form = DecisionForm(request.POST or None, sample=sample, earlier=check)
    if request.method == "POST" and form.is_valid():
        try:
            decide(check, request.user, form.decision())
        except DecisionProblem as problem:
            form.add_error(None, str(problem))
        else:
            messages.success(request, f"{sample.external_id}: {form.cleaned_data['verdict']}.")
            following = take_next(request.user, check.build)
            if following is None:
                return redirect("ml:builder:spot_checks")
            return redirect("ml:builder:spot_check", check_id=following.pk)
    earlier = (
        BuildSample.objects.filter(dialogue_id=sample.dialogue_id, turn__lt=sample.turn).order_by("turn")
        if sample.dialogue_id
        else BuildSample.objects.none()
    )
    return render(
        request,
        "ml/builder/spot_check.html",
        {
            "check": check,
            "sample": sample,
            "form": form,
            "earlier": earlier,
            "user_audio": audio_url(sample.user_audio_key, request.user) if sample.user_audio_key else "",
            "response_audio": (
                audio_url(sample.response_audio_key, request.user) if sample.response_audio_key else ""
            ),
            "reason_stages": {reason: STAGE_TITLES[stage] for reason, stage in REASON_STAGES.items()},
            "kept_turns": kept_turns_of_dialogue(sample),
            "removed_by_others": removed_by_others(sample),
            "position": open_checks(request.user).filter(build=check.build, id__lt=check.pk).count() + 1,
        },
    )
