"""Evaluation pages."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from evaluation.studies.models import StudyRater
from evaluation.studies.workflows import rater_progress
from webapp.http import StudioRequest
from webapp.roles import Role, role_required


@role_required(Role.EVALUATOR)
def evaluator_queue(request: StudioRequest) -> HttpResponse:
    """The studies the evaluator was invited to, each with how far they have got."""
    seats = (
        StudyRater.objects.filter(evaluator=request.user)
        .select_related("study")
        .order_by("-study__created_at")
    )
    studies = [{"study": seat.study, "progress": rater_progress(seat.study, request.user)} for seat in seats]
    return render(request, "evaluation/evaluator_queue.html", {"studies": studies})
