"""Who may start EchoChat jobs and see their checkpoints and dataset snapshots: the admin role.

The training pages (``ml.jobs.views``) and the Django admin (``ml.admin``, through
``webapp.roles.RoleAdminAccess`` with ``ML_ROLES``) both ask here. Role
checks come first (``role_required(*ML_ROLES)`` on every page); the helpers below then fetch the
object or answer 404.
"""

from __future__ import annotations

from django.http import Http404

from ml.jobs.launch import ML_JOB_KINDS
from ml.jobs.models import Checkpoint
from webapp.models import Job
from webapp.roles import Role

# Training spends GPU hours and decides which model the benchmark reports: admins only.
ML_ROLES: tuple[Role, ...] = (Role.ADMIN,)


def ml_job_or_404(job_id: int) -> Job:
    """Return an EchoChat job; other jobs have their own pages (webapp job_detail), so 404."""
    job = Job.objects.select_related("started_by").filter(pk=job_id, kind__in=ML_JOB_KINDS).first()
    if job is None:
        raise Http404("No EchoChat job with this id.")
    return job


def checkpoint_or_404(checkpoint_id: int) -> Checkpoint:
    """Return a checkpoint with what it came from (job, snapshot, parent), else raise Http404."""
    checkpoint = (
        Checkpoint.objects.select_related("produced_by", "dataset_snapshot", "parent")
        .filter(pk=checkpoint_id)
        .first()
    )
    if checkpoint is None:
        raise Http404("No such checkpoint.")
    return checkpoint
