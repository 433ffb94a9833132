"""The lead annotator's pages: the adjudication queue, side-by-side adjudication, fast-track, and the
buttons that assign annotators and start machine drafts. What they show comes from
`annotation.gold.reports`; who may use them from `annotation.gold.access`."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotation.gold import adjudication, reports
from annotation.gold.access import (
    ADJUDICATORS,
    GOLD_KEEPERS,
    OVERRIDERS,
    adjudicable_item,
    adjudication_refusal,
    may_adjudicate,
)
from annotation.labelling import drafts, workflows
from annotation.labelling.assignment import assign_waiting_items
from annotation.labelling.forms import FormError, cross_turn_from_form, labels_from_form, version_from_form
from annotation.labelling.models import items_ready_for_gold
from annotation.recording.takes import window_of
from webapp.http import StudioRequest
from webapp.roles import role_required


@role_required(*ADJUDICATORS)
def adjudication_queue(request: StudioRequest) -> HttpResponse:
    """Items ready for a gold reference (fast-track where annotators agree), in progress, or gold."""
    context = reports.adjudication_queue(
        request.GET.get("show", "ready"), request.GET.get("page"), viewer=request.user
    )
    return render(request, "annotation/adjudication_queue.html", context)


@role_required(*ADJUDICATORS, *OVERRIDERS)
@never_cache
def adjudicate(request: StudioRequest, item_id: int) -> HttpResponse:
    """Side by side: every submitted annotation, disagreements highlighted, the gold form pre-filled.

    A lead never reaches an item they labelled; an admin saves gold only with an override reason.
    """
    item = adjudicable_item(item_id)
    refusal = adjudication_refusal(request.user, item, override_reason=None)
    if refusal is not None:
        messages.error(request, f"{item.external_id}: {refusal}")
        return redirect("annotation:adjudication_queue" if may_adjudicate(request.user) else "home")
    if request.method != "POST":
        return render(
            request, "annotation/labelling/adjudicate.html", reports.adjudication_context(item, request.user)
        )
    try:
        perception, tom = labels_from_form(request.POST)
        cross_turn = cross_turn_from_form(request.POST)
        expected = version_from_form(request.POST)
        gold = adjudication.adjudicate_item(
            item.pk,
            lead=request.user,
            perception=perception,
            tom=tom,
            expected_gold_version=expected,
            reference_response=request.POST.get("reference_response", "").strip(),
            note=request.POST.get("note", "").strip(),
            override_reason=request.POST.get("override_reason", ""),
            cross_turn=cross_turn,
        )
    except FormError as error:
        messages.error(request, str(error))
        return redirect("annotation:adjudicate", item_id=item.pk)
    except workflows.InvalidLabels as invalid:
        context = reports.adjudication_context(
            item,
            request.user,
            perception=perception,
            tom=tom,
            problems=invalid.problems,
            cross_turn=cross_turn,
        )
        return render(request, "annotation/labelling/adjudicate.html", context, status=422)
    except workflows.LabellingError as error:
        context = reports.adjudication_context(
            item, request.user, perception=perception, tom=tom, cross_turn=cross_turn
        )
        context["save_error"] = str(error)
        return render(request, "annotation/labelling/adjudicate.html", context, status=409)
    messages.success(request, f"Saved gold v{gold.version} of {item.external_id}.")
    return _to_next_ready_item()


@role_required(*ADJUDICATORS, *OVERRIDERS)
@require_GET
def adjudicate_window(request: StudioRequest, item_id: int) -> HttpResponse:
    """A long take's contours and words between ?start= and ?end= seconds (`takes.window_of`), for
    whoever may open the item's adjudication page (a lead who labelled it: 403)."""
    item = adjudicable_item(item_id)
    refusal = adjudication_refusal(request.user, item, override_reason=None)
    if refusal is not None:
        return JsonResponse({"error": refusal}, status=403)
    if item.recording is None:
        raise Http404("This item has no take.")
    try:
        return JsonResponse(window_of(item.recording, request.GET))
    except ValueError as error:
        return JsonResponse({"error": str(error)}, status=400)


@role_required(*ADJUDICATORS)
@require_POST
def fast_track(request: StudioRequest, item_id: int) -> HttpResponse:
    """Save the proposed gold of an item whose annotators agree on every categorical field."""
    item = adjudicable_item(item_id)
    try:
        gold = adjudication.fast_track_item(
            item.pk, lead=request.user, expected_gold_version=version_from_form(request.POST)
        )
    except (workflows.LabellingError, FormError) as error:
        messages.error(request, f"{item.external_id}: {error}")
        return redirect("annotation:adjudicate", item_id=item.pk)
    messages.success(request, f"Fast-tracked {item.external_id} to gold v{gold.version}.")
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)
    return redirect("annotation:adjudication_queue")


def _to_next_ready_item() -> HttpResponse:
    following = items_ready_for_gold().first()
    if following is None:
        return redirect("annotation:adjudication_queue")
    return redirect("annotation:adjudicate", item_id=following.pk)


@role_required(*GOLD_KEEPERS)
@require_POST
def assign_waiting(request: StudioRequest) -> HttpResponse:
    """Give every recorded item still short of annotators its share, least-loaded annotators first."""
    results = assign_waiting_items()
    assigned = sum(len(result.assigned) for result in results)
    short = [result for result in results if result.shortfall]
    message = f"Assigned {assigned} annotations over {sum(1 for r in results if r.assigned)} items."
    if short:
        message += f" {len(short)} items still lack annotators: the annotator pool is too small."
    messages.success(request, message)
    return _back_to_lead_tools(request)


@role_required(*GOLD_KEEPERS)
@require_POST
def start_drafts(request: StudioRequest) -> HttpResponse:
    """Queue machine drafts of the ToM fields for recorded items that have none yet."""
    try:
        job = drafts.start_draft_job(started_by=request.user)
    except drafts.DraftsDisabled as disabled:
        messages.error(request, str(disabled))
    else:
        messages.success(request, f"Draft job #{job.pk} queued.")
    return _back_to_lead_tools(request)


def _back_to_lead_tools(request: StudioRequest) -> HttpResponse:
    # Admins may press these buttons too, but the adjudication queue is a lead's page.
    if may_adjudicate(request.user):
        return redirect("annotation:adjudication_queue")
    return redirect("annotation:admin_dashboard")
