"""The admin's demo button: synthesise the demo items' speech again, as a job with progress."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from annotation.demo.recording import RESYNTHESIS_JOB
from webapp.http import StudioRequest
from webapp.jobs import start_job
from webapp.roles import Role, role_required


@role_required(Role.ADMIN)
@require_POST
def start_demo_resynthesis(request: StudioRequest) -> HttpResponse:
    """Start the demo job that synthesises the demo items' speech again."""
    job = start_job(RESYNTHESIS_JOB, started_by=request.user, parameters={})
    return redirect("job_detail", job_id=job.pk)
