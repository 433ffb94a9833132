"""A build's status in the API (admins): how it ended and every stage's rows, in the one status
vocabulary of jobs over many rows (docs/jobs.md), with the figures the build page shows."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ml.builder.models import Build
from ml.builder.pages.access import BUILD_ROLES, build_or_404
from ml.builder.pages.reports import build_outcome, stage_reports
from webapp.api.errors import ProblemSerializer
from webapp.roles import HasRole


def build_status(build: Build) -> dict[str, Any]:
    """Return the build's status, its outcome (``rows`` as a job's result carries them) and its stages'."""
    stages = stage_reports(build, [])
    outcome = build_outcome(build, [report.row for report in stages])
    return {
        "id": build.pk,
        "name": build.name,
        "status": build.status,
        "outcome": outcome.status,
        "summary": outcome.sentence,
        "rows": outcome.tally.as_result() if outcome.tally is not None else None,
        "stages": [
            {
                "stage": report.row.stage,
                "title": report.title,
                "status": report.row.status,
                "outcome": report.tally.status if report.outcome and report.tally else "",
                "summary": report.outcome,
                "rows": report.tally.as_result() if report.tally is not None else None,
                "job": report.row.job_id,
            }
            for report in stages
        ],
    }


class BuildDetailView(APIView):
    permission_classes = [HasRole]
    required_roles = BUILD_ROLES

    @extend_schema(
        summary="A build's status, and each stage's rows: succeeded, finished with errors or failed",
        responses={200: OpenApiTypes.OBJECT, 404: ProblemSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(build_status(build_or_404(pk)))
