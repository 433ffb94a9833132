"""Admin pages for EchoChat: start jobs, watch them train, browse checkpoints."""

from __future__ import annotations

from typing import Any, Protocol

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from ml.jobs.access import ML_ROLES, checkpoint_or_404, ml_job_or_404
from ml.jobs.builds.forms import BuildSource
from ml.jobs.datasets import ready_counts
from ml.jobs.echomind.forms import EchoMindInferenceJobForm
from ml.jobs.forms import (
    EndpointInferenceJobForm,
    InferenceJobForm,
    RewardScoringJobForm,
    RewardTrainingJobForm,
    RlJobForm,
    SftJobForm,
)
from ml.jobs.launch import (
    ECHOMIND_INFERENCE_JOB,
    ENDPOINT_INFERENCE_JOB,
    INFERENCE_JOB,
    JOB_TITLES,
    ML_JOB_KINDS,
    REWARD_SCORING_JOB,
    REWARD_TRAINING_JOB,
    RL_JOB,
    SFT_JOB,
    LaunchRefused,
    start_ml_job,
)
from ml.jobs.lineage import SHOWN, checkpoint_lineage
from ml.jobs.metric_charts import charts_json
from ml.jobs.models import Checkpoint, DatasetSnapshot
from webapp.http import StudioRequest
from webapp.jobs import job_spec
from webapp.models import Job
from webapp.roles import role_required


class StartForm(Protocol):
    def is_valid(self) -> bool: ...

    def chosen_splits(self) -> list[str] | None: ...

    def job_parameters(self) -> dict[str, Any]: ...

    def add_error(self, field: str | None, error: Any) -> None: ...


START_FORMS: dict[str, type[Any]] = {
    SFT_JOB: SftJobForm,
    RL_JOB: RlJobForm,
    REWARD_TRAINING_JOB: RewardTrainingJobForm,
    REWARD_SCORING_JOB: RewardScoringJobForm,
    INFERENCE_JOB: InferenceJobForm,
    ENDPOINT_INFERENCE_JOB: EndpointInferenceJobForm,
    ECHOMIND_INFERENCE_JOB: EchoMindInferenceJobForm,
}


@role_required(*ML_ROLES)
def training_home(request: StudioRequest) -> HttpResponse:
    """What is ready to train on, the checkpoints, and the latest EchoChat jobs."""
    readiness = {purpose.label: ready_counts(purpose.value) for purpose in DatasetSnapshot.Purpose}
    return render(
        request,
        "ml/training.html",
        {
            "readiness": readiness,
            "checkpoints": Checkpoint.objects.select_related("produced_by", "dataset_snapshot")[:100],
            "jobs": Job.objects.filter(kind__in=ML_JOB_KINDS).select_related("started_by")[:30],
            "job_titles": JOB_TITLES,
        },
    )


@role_required(*ML_ROLES)
def start_job_page(request: StudioRequest, kind: str) -> HttpResponse:
    """The start form of one job kind; a valid submission snapshots the data and enqueues the job."""
    form_class = START_FORMS.get(kind)
    if form_class is None:
        raise Http404("Unknown EchoChat job kind.")
    initial = {"start_from": request.GET["start_from"]} if "start_from" in request.GET else None
    form: StartForm = form_class(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            job = start_ml_job(
                kind,
                started_by=request.user,
                parameters=form.job_parameters(),
                splits=form.chosen_splits(),
                build=form.chosen_build() if isinstance(form, BuildSource) else None,
            )
        except LaunchRefused as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("ml:job", job_id=job.pk)
    return render(
        request,
        "ml/start_job.html",
        {"form": form, "kind": kind, "title": JOB_TITLES[kind], "queue": job_spec(kind).queue},
    )


@role_required(*ML_ROLES)
@never_cache
def job_page(request: StudioRequest, job_id: int) -> HttpResponse:
    """An EchoChat job: progress, metric charts, its dataset snapshot, its checkpoint, its log.

    htmx polls the `live` partial (charts data, outcome, log) until the job ends.
    """
    job = ml_job_or_404(job_id)
    context = {
        "job": job,
        "title": JOB_TITLES.get(job.kind, job.kind),
        "charts": charts_json(job.metrics or []),
        "snapshot": DatasetSnapshot.objects.filter(job=job).first(),
        "checkpoint": Checkpoint.objects.filter(produced_by=job).select_related("parent").first(),
    }
    template = "ml/job.html#live" if request.htmx else "ml/job.html"
    return render(request, template, context)


@role_required(*ML_ROLES)
def checkpoint_page(request: StudioRequest, checkpoint_id: int) -> HttpResponse:
    """A checkpoint: where it is, what it was trained from and on (snapshots, gold versions, takes and
    annotators behind them), the evaluations run on it, its metadata."""
    checkpoint = checkpoint_or_404(checkpoint_id)
    return render(
        request,
        "ml/checkpoint.html",
        {
            "checkpoint": checkpoint,
            "children": checkpoint.children.all(),
            "lineage": checkpoint_lineage(checkpoint),
            "shown": SHOWN,
        },
    )
