"""The lead annotator's pages: side-by-side adjudication, fast-track, and the buttons that assign
annotators and start machine drafts (the adjudication queue is in annotation.labelling.queues)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from annotation.audio.suggestions import contours_for_waveform
from annotation.gold import adjudication
from annotation.gold.models import GoldReference
from annotation.labelling import drafts
from annotation.labelling import workflows as labelling
from annotation.labelling.comparison import FieldComparison
from annotation.labelling.forms import FormError, labels_from_form, strategy_choices, version_from_form
from annotation.labelling.models import Annotation, Strategy
from annotation.labelling.schema import CHOICES, LabelProblem, script_words
from annotation.recording.models import Item
from webapp.http import StudioRequest
from webapp.roles import Role, has_role, role_required
from webapp.storage import audio_url


def adjudicable_item(item_id: int) -> Item:
    """Return an item that is being annotated or already has gold; 404 otherwise."""
    return get_object_or_404(
        Item.objects.select_related("recording"),
        pk=item_id,
        state__in=[Item.State.ANNOTATING, Item.State.GOLD],
    )


@role_required(Role.LEAD_ANNOTATOR)
@never_cache
def adjudicate(request: StudioRequest, item_id: int) -> HttpResponse:
    """Side by side: every submitted annotation, disagreements highlighted, the gold form pre-filled."""
    item = adjudicable_item(item_id)
    if request.method != "POST":
        return render(request, "annotation/labelling/adjudicate.html", adjudication_context(item))
    try:
        perception, tom = labels_from_form(request.POST)
        expected = version_from_form(request.POST)
        gold = adjudication.adjudicate_item(
            item.pk,
            lead=request.user,
            perception=perception,
            tom=tom,
            expected_gold_version=expected,
            reference_response=request.POST.get("reference_response", "").strip(),
            note=request.POST.get("note", "").strip(),
        )
    except FormError as error:
        messages.error(request, str(error))
        return redirect("annotation:adjudicate", item_id=item.pk)
    except labelling.InvalidLabels as invalid:
        context = adjudication_context(item, perception=perception, tom=tom, problems=invalid.problems)
        return render(request, "annotation/labelling/adjudicate.html", context, status=422)
    except labelling.LabellingError as error:
        context = adjudication_context(item, perception=perception, tom=tom)
        context["save_error"] = str(error)
        return render(request, "annotation/labelling/adjudicate.html", context, status=409)
    messages.success(request, f"Saved gold v{gold.version} of {item.external_id}.")
    return _to_next_ready_item()


@role_required(Role.LEAD_ANNOTATOR)
@require_POST
def fast_track(request: StudioRequest, item_id: int) -> HttpResponse:
    """Save the proposed gold of an item whose annotators agree on every categorical field."""
    item = adjudicable_item(item_id)
    try:
        gold = adjudication.fast_track_item(
            item.pk, lead=request.user, expected_gold_version=version_from_form(request.POST)
        )
    except (labelling.LabellingError, FormError) as error:
        messages.error(request, f"{item.external_id}: {error}")
        return redirect("annotation:adjudicate", item_id=item.pk)
    messages.success(request, f"Fast-tracked {item.external_id} to gold v{gold.version}.")
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)
    return redirect("annotation:adjudication_queue")


def _to_next_ready_item() -> HttpResponse:
    following = adjudication.items_ready_for_adjudication().first()
    if following is None:
        return redirect("annotation:adjudication_queue")
    return redirect("annotation:adjudicate", item_id=following.pk)


@role_required(Role.LEAD_ANNOTATOR, Role.ADMIN)
@require_POST
def assign_waiting(request: StudioRequest) -> HttpResponse:
    """Give every recorded item still short of annotators its share, least-loaded annotators first."""
    results = labelling.assign_waiting_items()
    assigned = sum(len(result.assigned) for result in results)
    short = [result for result in results if result.shortfall]
    message = f"Assigned {assigned} annotations over {sum(1 for r in results if r.assigned)} items."
    if short:
        message += f" {len(short)} items still lack annotators: the annotator pool is too small."
    messages.success(request, message)
    return _back_to_lead_tools(request)


@role_required(Role.LEAD_ANNOTATOR, Role.ADMIN)
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
    if has_role(request.user, Role.LEAD_ANNOTATOR):
        return redirect("annotation:adjudication_queue")
    return redirect("admin_dashboard")


def adjudication_context(
    item: Item,
    *,
    perception: dict[str, Any] | None = None,
    tom: dict[str, Any] | None = None,
    problems: list[LabelProblem] | None = None,
) -> dict[str, Any]:
    """Return the adjudication page's context: comparison rows and the gold form's values."""
    annotations = list(adjudication.submitted_annotations().filter(item=item))
    current = adjudication.current_gold(item)
    comparison = adjudication.compare_item(item, annotations) if annotations else None
    if perception is None or tom is None:
        if current is not None:
            perception, tom = current.perception, current.tom
        elif comparison is not None:
            perception, tom = dict(comparison.proposal.perception), dict(comparison.proposal.tom)
        else:
            perception, tom = {}, {}
    strategies = list(Strategy.objects.all())
    names = {strategy.slug: strategy.name for strategy in strategies}
    chosen = strategy_choices(tom, [strategy.slug for strategy in strategies])
    recording = item.recording
    return {
        "item": item,
        "annotations": annotations,
        "comparison": comparison,
        "rows": [_row(field, names, perception, tom) for field in comparison.fields] if comparison else [],
        "current_gold": current,
        "gold_history": list(
            GoldReference.objects.filter(item=item).select_related("adjudicated_by").order_by("-version")[:10]
        ),
        "gold_version": current.version if current else 0,
        "perception": perception,
        "tom": tom,
        "words": list(enumerate(script_words(item.text))),
        "stressed_json": json.dumps(perception.get("stressed_words", [])),
        "segment_options": _segment_options(annotations, perception),
        "strategy_rows": [(strategy, chosen[strategy.slug]) for strategy in strategies],
        "constraints_text": "\n".join(tom.get("constraints", [])),
        "audio_url": audio_url(recording.audio_key) if recording and recording.audio_key else "",
        "contours": contours_for_waveform(recording.contours) if recording else {},
        "problems": problems or [],
        "ready": bool(annotations) and all(a.is_submitted for a in item.annotations.all()),
    }


def _row(
    comparison: FieldComparison,
    strategy_names: dict[str, str],
    perception: dict[str, Any],
    tom: dict[str, Any],
) -> dict[str, Any]:
    spec = comparison.spec
    gold = (perception if spec.section == "perception" else tom).get(spec.name)
    return {
        "spec": spec,
        "agreed": comparison.agreed,
        "values": [_display(spec.kind, spec.name, value, strategy_names) for value in comparison.values],
        "raw_values": list(comparison.values),
        "gold": gold,
        "options": [option for option in CHOICES.get(spec.name, ()) if option],
    }


def _display(kind: str, name: str, value: Any, strategy_names: dict[str, str]) -> str:
    if kind == "flag":
        return "yes" if value else "no"
    if kind == "segments":
        return "; ".join(
            f"{segment['start']:.2f}–{segment['end']:.2f} s {segment['emotion']}"
            + (f" “{segment['words']}”" if segment.get("words") else "")
            for segment in value
        )
    if kind == "set":
        labels = [strategy_names.get(entry, entry) for entry in value] if "strategies" in name else value
        return ", ".join(labels)
    return str(value)


def _segment_options(annotations: list[Annotation], perception: dict[str, Any]) -> list[dict[str, Any]]:
    """Return one choice per distinct set of segments: the lead picks whose segmentation becomes gold."""
    current = json.dumps(perception.get("emotion_segments", []))
    options: dict[str, dict[str, Any]] = {}
    for annotation in annotations:
        value = json.dumps(annotation.perception.get("emotion_segments", []))
        options.setdefault(value, {"value": value, "annotators": [], "checked": value == current})
        options[value]["annotators"].append(annotation.annotator.username)
    if current not in options:
        options[current] = {"value": current, "annotators": ["current gold"], "checked": True}
    return list(options.values())
