"""Project-level pages: landing, health and jobs (the admin's overview page is annotation.recording.overview)."""

from __future__ import annotations

from functools import cache

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_GET, require_POST

from webapp.health import check_broker, check_database
from webapp.http import StudioRequest
from webapp.jobs import cancel_job
from webapp.models import Job, User
from webapp.roles import Role, home_url_for, role_required


@login_required
def home(request: StudioRequest) -> HttpResponse:
    """Send each person to their own work queue."""
    url = home_url_for(request.user)
    if url is None:
        return render(request, "webapp/no_role.html", status=403)
    return redirect(url)


@cache
def _favicon_bytes() -> bytes:
    return (settings.BASE_DIR / "static" / "favicon.ico").read_bytes()


@require_GET
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    """The site's icon at the address browsers ask for without being told (every page also links it)."""
    return HttpResponse(_favicon_bytes(), content_type="image/x-icon")


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Report database and broker reachability: 200 when both answer, 503 otherwise.

    Anyone (a load balancer) learns the status; only staff see which database and broker answer
    and their errors, which name hosts and software an attacker would like to know.
    """
    database, broker = check_database(), check_broker()
    healthy = database["ok"] and broker["ok"]
    body: dict[str, object] = {"status": "ok" if healthy else "unavailable"}
    if request.user.is_authenticated and request.user.is_staff:
        body.update(database=database, broker=broker)
    return JsonResponse(body, status=200 if healthy else 503)


@role_required(Role.ADMIN)
def job_list(request: StudioRequest) -> HttpResponse:
    """Every job, newest first."""
    jobs = Job.objects.select_related("started_by")[:200]
    return render(request, "webapp/job_list.html", {"jobs": jobs})


@role_required(Role.ADMIN)
@never_cache
def job_detail(request: StudioRequest, job_id: int) -> HttpResponse:
    """A job's page; htmx polls the `progress` partial until the job ends."""
    job = get_object_or_404(Job, pk=job_id)
    template = "webapp/job_detail.html#progress" if request.htmx else "webapp/job_detail.html"
    return render(request, template, {"job": job})


@role_required(Role.ADMIN)
@require_POST
def job_cancel(request: StudioRequest, job_id: int) -> HttpResponse:
    """Cancel a job (queued: at once; running: at its next progress report)."""
    job = cancel_job(get_object_or_404(Job, pk=job_id), actor=request.user)
    if request.htmx:
        return render(request, "webapp/job_detail.html#progress", {"job": job})
    return redirect("job_detail", job_id=job.pk)


class ShortcutForm(forms.ModelForm):
    class Meta:
        model = User
        fields = ["shortcut_keys"]
        widgets = {"shortcut_keys": forms.RadioSelect}
        labels = {"shortcut_keys": "Keyboard shortcuts"}


@login_required
def keyboard_settings(request: StudioRequest) -> HttpResponse:
    """Each person chooses whether single-key shortcuts act, need Alt, or are off (WCAG 2.1.4)."""
    form = ShortcutForm(request.POST or None, instance=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Keyboard shortcuts saved.")
        return redirect("keyboard_settings")
    return render(request, "webapp/keyboard_settings.html", {"form": form})
