"""Evaluation pages."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from webapp.http import StudioRequest
from webapp.roles import Role, role_required


@role_required(Role.EVALUATOR)
def evaluator_queue(request: StudioRequest) -> HttpResponse:
    """The evaluator's rating assignments across the studies they were invited to."""
    return render(request, "evaluation/evaluator_queue.html", {"assignments": []})
