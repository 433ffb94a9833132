"""JSON shapes shared by every app's API: a Job's status and progress."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from webapp.api.errors import Conflict
from webapp.jobs import cancel_job
from webapp.models import Job


class JobSerializer(serializers.ModelSerializer[Job]):
    """A long task's status; `progress` runs from 0 to 1, `result` is set once it ended with one.

    A job over many rows ends succeeded, finished_with_errors or failed (`webapp.lib.row_outcome`),
    and its result carries the tally: ``result.rows = {total, failed, share, percent, noun, status}``."""

    finished = serializers.BooleanField(source="is_finished", read_only=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "finished",
            "progress",
            "message",
            "parameters",
            "result",
            "error",
            "attempts",
            "cancel_requested",
            "created_at",
            "started_at",
            "finished_at",
            "provenance",
        ]
        read_only_fields = fields


def cancel_or_conflict(job: Job | None, actor: Any) -> Job:
    """Cancel the job (at once when queued, at its next step when running); 409 once it has ended."""
    if job is None or job.is_finished:
        raise Conflict("The job has already ended; there is nothing to cancel.")
    return cancel_job(job, actor=actor)
