"""The admin's landing page: what the studio holds (items by pipeline state), the takes the speech
check flagged, and the latest jobs."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from annotation.recording.reports import flagged_takes, item_state_rows
from webapp.http import StudioRequest
from webapp.models import Job
from webapp.roles import Role, role_required


@role_required(Role.ADMIN)
def admin_dashboard(request: StudioRequest) -> HttpResponse:
    """The admin's landing page: items by state, takes the speech check flagged, the latest jobs."""
    jobs = Job.objects.select_related("started_by")[:20]
    return render(
        request,
        "webapp/admin_dashboard.html",
        {"item_states": item_state_rows(), "flagged": flagged_takes(), "jobs": jobs},
    )
