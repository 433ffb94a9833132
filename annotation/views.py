"""Work-queue pages of the recording and annotation side."""

from __future__ import annotations

from django.db.models import Prefetch
from django.http import HttpResponse
from django.shortcuts import render

from annotation.models import Item, Review, Take
from webapp.http import StudioRequest
from webapp.roles import Role, role_required


@role_required(Role.VOICE_ACTOR)
def actor_queue(request: StudioRequest) -> HttpResponse:
    """The actor's assigned scripts, each with the history of their own takes."""
    own_takes = Take.objects.filter(actor=request.user).prefetch_related("reviews")
    items = (
        Item.objects.filter(actor=request.user)
        .exclude(state__in=[Item.State.SCRIPTED])
        .prefetch_related(Prefetch("takes", queryset=own_takes, to_attr="own_takes"))
    )
    return render(request, "annotation/actor_queue.html", {"items": items})


@role_required(Role.REVIEWER)
def review_queue(request: StudioRequest) -> HttpResponse:
    """Takes waiting for this reviewer's verdict (no actor information is loaded at all)."""
    pending = (
        Review.objects.filter(reviewer=request.user, verdict=Review.Verdict.PENDING)
        .select_related("take__item")
        .only(
            "pk",
            "assigned_at",
            "take__public_id",
            "take__item__external_id",
            "take__item__text",
            "take__item__target_emotion",
            "take__item__scenario",
        )
    )
    return render(request, "annotation/review_queue.html", {"pending": pending})


@role_required(Role.ANNOTATOR)
def annotator_queue(request: StudioRequest) -> HttpResponse:
    """Accepted recordings waiting for annotation."""
    items = Item.objects.filter(state__in=[Item.State.RECORDED, Item.State.ANNOTATING])
    return render(request, "annotation/annotator_queue.html", {"items": items})


@role_required(Role.LEAD_ANNOTATOR)
def adjudication_queue(request: StudioRequest) -> HttpResponse:
    """Items whose annotations are in and wait for a gold reference."""
    items = Item.objects.filter(state=Item.State.ANNOTATING)
    return render(request, "annotation/adjudication_queue.html", {"items": items})
