"""Pages of the recording studio: actors' scripts and recorder, blind review, takes, and the admin side."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, BinaryIO, cast
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import F, Prefetch
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.audio.prosody import contours_overview
from annotation.audio.upload import ACCEPTED_FORMATS_TEXT
from annotation.recording import reports
from annotation.recording.access import (
    eligible_reviewers,
    item_for_actor,
    items_of_actor,
    may_manage_recording,
    may_see_flags_of,
    own_takes,
    review_for_reviewer,
    take_for_viewer,
    verdict_unlocked,
)
from annotation.recording.consent.models import ConsentRecord
from annotation.recording.conversation.history import conversation_so_far
from annotation.recording.forms import AssignmentForm, ItemImportForm, ReviewerChoiceForm, VerdictForm
from annotation.recording.items import AssignmentReport, assign_items, import_items, start_item_import
from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import (
    REVIEWS_PER_TAKE,
    PlaybackRequired,
    ReviewFeedback,
    ReviewNotFound,
    ReviewProblem,
    add_reviewer,
    feedback_from,
    present_reviews,
    record_playback,
    replace_reviewer,
    submit_verdict,
    verdict_changeable,
)
from annotation.recording.takes import (
    RECORDABLE_STATES,
    AnalysisNotRestartable,
    analysis_restartable,
    page_peaks,
    recordable_refusal,
    restart_analysis,
    upload_limits,
)
from webapp.http import StudioRequest
from webapp.lib.progress import QueueProgress
from webapp.models import User
from webapp.roles import Role, role_required
from webapp.storage import audio_url

ACTOR_TABS = {
    "to_record": ("To record", [Item.State.RECORDING]),
    "in_review": ("In review", [Item.State.IN_REVIEW]),
    "accepted": ("Accepted", [Item.State.RECORDED, Item.State.ANNOTATING, Item.State.GOLD]),
}
SCRIPTS_PER_PAGE = 25
MAX_IMPORT_BYTES = 2 * 2**30
SYNC_IMPORT_BYTES = 16 * 2**20  # ~150,000 rows, a few seconds; larger files become a job
IMPORT_ERRORS_SHOWN = 200


@dataclass(frozen=True)
class TakeRow:
    take: Take
    audio_url: str
    feedback: ReviewFeedback | None  # once decided


@dataclass(frozen=True)
class ScriptRow:
    item: Item
    takes: list[TakeRow]
    refusal: str | None = None  # why it may not be recorded now (a dialogue turn before its turn)


def _take_rows(takes: list[Take], viewer: User) -> list[TakeRow]:
    return [
        TakeRow(
            take,
            audio_url(take.audio_key, viewer),
            feedback_from(take.reviews.all()) if take.status in Take.DECIDED_STATUSES else None,
        )
        for take in takes
    ]


def _scripts_with_takes(items: Any, actor: User) -> list[ScriptRow]:
    actors_takes = Take.objects.filter(actor=actor).prefetch_related("reviews").order_by("-created_at")
    with_takes = items.prefetch_related(Prefetch("takes", queryset=actors_takes, to_attr="own_takes"))
    # A dialogue turn opens after the turns before it: the queue asks the recorder's one rule, so a
    # locked turn shows why instead of a Record button (one query per open dialogue turn shown).
    return [
        ScriptRow(
            item,
            _take_rows(item.own_takes, actor),
            recordable_refusal(item, actor) if item.dialogue_id and item.state in RECORDABLE_STATES else None,
        )
        for item in with_takes
    ]


# --- Actors ---------------------------------------------------------------------------------------


@role_required(Role.VOICE_ACTOR)
def actor_queue(request: StudioRequest) -> HttpResponse:
    """The actor's assigned scripts by stage, each with the history of their takes and the reasons."""
    tab = request.GET.get("tab", "to_record")
    if tab not in ACTOR_TABS:
        tab = "to_record"
    mine = items_of_actor(request.user)
    counts = reports.item_state_counts(mine)
    tabs = [
        (key, label, sum(counts[state] for state in states)) for key, (label, states) in ACTOR_TABS.items()
    ]
    # Single scripts first, then each dialogue's turns together and in conversation order.
    in_order = mine.filter(state__in=ACTOR_TABS[tab][1]).order_by(
        F("dialogue__external_id").asc(nulls_first=True), "turn", "external_id"
    )
    page = Paginator(in_order.select_related("dialogue"), SCRIPTS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/actor_queue.html",
        {
            "tab": tab,
            "tabs": tabs,
            "page": page,
            "scripts": _scripts_with_takes(page.object_list, request.user),
        },
    )


@role_required(Role.VOICE_ACTOR)
def record_item(request: StudioRequest, external_id: str) -> HttpResponse:
    """One script: what to perform, the recorder, and the takes so far (htmx refreshes the history).

    An actor without consent in force goes to the consent page first, and comes back after it.
    """
    item = item_for_actor(request.user, external_id)
    if ConsentRecord.objects.in_force_for(request.user.pk) is None:
        messages.info(request, "Before your first take, read the consent text and choose what you allow.")
        return redirect(f"{reverse('annotation:my_consent')}?{urlencode({'next': request.get_full_path()})}")
    takes = list(own_takes(request.user, item).prefetch_related("reviews"))
    refusal = recordable_refusal(item, request.user)
    context = {
        "item": item,
        # Only a dialogue turn waiting for earlier turns says so; other states keep their own look.
        "recordable": refusal is None,
        "turn_refusal": refusal if item.state in RECORDABLE_STATES else None,
        "takes": _take_rows(takes, request.user),
        "analysing": any(take.status == Take.Status.ANALYSING for take in takes),
        "upload_url": reverse("annotation:api_item_takes", args=[item.external_id]),
        "formats": ACCEPTED_FORMATS_TEXT,
        "limits": upload_limits(),
    }
    template = (
        "annotation/recording/record.html#take-history"
        if request.htmx
        else "annotation/recording/record.html"
    )
    if not request.htmx:
        context["history"] = conversation_so_far(item, request.user, own_takes_only=True)
        context["history_note"] = "Your takes of the earlier turns, and the replies you heard."
    return render(request, template, context)


# --- Takes ----------------------------------------------------------------------------------------


@role_required(Role.ADMIN, Role.VOICE_ACTOR)
def take_detail(request: StudioRequest, public_id: uuid.UUID) -> HttpResponse:
    """A take's waveform with its pitch and energy contours, its measurements and its reviews."""
    take = take_for_viewer(request.user, public_id)
    is_admin = may_manage_recording(request.user)
    reviews = list(take.reviews.select_related("reviewer"))
    context: dict[str, Any] = {
        "take": take,
        "item": take.item,
        "is_admin": is_admin,
        "audio_url": audio_url(take.audio_key, request.user),
        # At most 400 points a contour: a long take keeps 20 a second for the workbench's windows.
        "contours": contours_overview(take.contours) if take.contours else None,
        "peaks": page_peaks(take),
        "qc_rows": reports.qc_rows(take.qc),
        "feature_rows": reports.feature_rows(take.features),
        "speech_rows": reports.speech_rows(take.qc),
        "speech_flags": reports.speech_flags(take.qc),
        "feedback": feedback_from(reviews) if take.status in Take.DECIDED_STATUSES else None,
    }
    if is_admin:
        candidates = eligible_reviewers(take)
        context.update(
            {
                "original_url": audio_url(take.original_key, request.user),
                "reviews": reviews,
                "reviewer_form": ReviewerChoiceForm(candidates=candidates),
                "can_add_reviewer": take.status == Take.Status.IN_REVIEW and len(reviews) < REVIEWS_PER_TAKE,
                "can_change_reviewers": take.status == Take.Status.IN_REVIEW and candidates.exists(),
                "analysis_failed": analysis_restartable(take),
            }
        )
    return render(request, "annotation/recording/take.html", context)


@role_required(Role.ADMIN)
@require_POST
def take_reviewers(request: StudioRequest, public_id: uuid.UUID) -> HttpResponse:
    """Admin override: give a pending review to another reviewer, or add a missing reviewer."""
    take = take_for_viewer(request.user, public_id)
    form = ReviewerChoiceForm(request.POST, candidates=eligible_reviewers(take))
    if not form.is_valid():
        messages.error(request, "Choose a reviewer who is not the actor and not already on this take.")
        return redirect("annotation:take_detail", public_id=take.public_id)
    reviewer = form.cleaned_data["reviewer"]
    review_id = form.cleaned_data["review"]
    try:
        if review_id:
            review = take.reviews.filter(pk=review_id).select_related("take").first()
            if review is None:
                raise ReviewProblem("That review is not one of this take's.")
            replace_reviewer(review, reviewer)
            messages.success(request, f"The review now goes to {reviewer}.")
        else:
            add_reviewer(take, reviewer)
            messages.success(request, f"{reviewer} now reviews this take.")
    except ReviewProblem as problem:
        messages.error(request, str(problem))
    return redirect("annotation:take_detail", public_id=take.public_id)


@role_required(Role.ADMIN)
@require_POST
def take_reanalyse(request: StudioRequest, public_id: uuid.UUID) -> HttpResponse:
    """Queue a take's analysis again (after its job failed)."""
    take = take_for_viewer(request.user, public_id)
    try:
        job = restart_analysis(take, request.user)
    except AnalysisNotRestartable as refused:
        messages.error(request, str(refused))
        return redirect("annotation:take_detail", public_id=take.public_id)
    return redirect("job_detail", job_id=job.pk)


# --- Reviewers ------------------------------------------------------------------------------------


REVIEW_TABS = {"to_review": "To review", "changeable": "Given, still open to change"}


@role_required(Role.REVIEWER)
def review_queue(request: StudioRequest) -> HttpResponse:
    """Takes waiting for this reviewer's verdict, and verdicts they may still change (the take is
    not decided yet): the scripts only, nothing about who recorded them."""
    tab = request.GET.get("tab", "to_review")
    if tab not in REVIEW_TABS:
        tab = "to_review"
    pending = Review.objects.open_for(request.user).select_related("take__item")
    changeable = Review.objects.changeable_by(request.user).select_related("take__item")
    counts = {"to_review": pending.count(), "changeable": changeable.count()}
    done = Review.objects.decided_by(request.user).count()
    return render(
        request,
        "annotation/review_queue.html",
        {
            "tab": tab,
            "tabs": [(key, label, counts[key]) for key, label in REVIEW_TABS.items()],
            "rows": pending if tab == "to_review" else changeable,
            "first_pending": pending.first(),
            "waiting": counts["to_review"],
            "done": done,
        },
    )


@role_required(Role.REVIEWER)
def review_take(request: StudioRequest, review_id: uuid.UUID) -> HttpResponse:
    """Listen to one take blind and accept or reject it; then on to the next one. The verdict
    waits until the take has played to the end, and may be changed until the take is decided."""
    review = review_for_reviewer(request.user, review_id)
    form = VerdictForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            submit_verdict(
                review.pk,
                request.user,
                form.cleaned_data["verdict"],
                form.cleaned_data["reasons"],
                form.cleaned_data["comment"],
            )
        except ReviewNotFound:
            messages.error(request, "This review is no longer yours.")
            return redirect("annotation:review_queue")
        except ReviewProblem as problem:
            messages.error(request, str(problem))
        else:
            messages.success(request, f"Verdict on {review.take.item.external_id} saved.")
            following = Review.objects.open_for(request.user).first()
            if following is not None:
                return redirect("annotation:review_take", review_id=following.public_id)
            return redirect("annotation:review_queue")
        review = review_for_reviewer(request.user, review_id)
    present_reviews([review])
    is_open = verdict_changeable(review.take)
    waiting = Review.objects.open_for(request.user).count()
    done = Review.objects.decided_by(request.user).count()
    given = review.verdict != Review.Verdict.PENDING
    if given and request.method != "POST":
        form = VerdictForm(
            initial={"verdict": review.verdict, "reasons": review.reasons, "comment": review.comment}
        )
    return render(
        request,
        "annotation/recording/review.html",
        {
            "review": review,
            "item": review.take.item,
            "audio_url": audio_url(review.take.audio_key, request.user),
            "peaks": page_peaks(review.take),
            # Context only: the playback gate is about the take under review, not these.
            "history": conversation_so_far(review.take.item, request.user, own_takes_only=False),
            "history_note": "The earlier turns of this dialogue and the replies to them, for context.",
            "form": form,
            "is_open": is_open,
            "given": given,
            "unlocked": verdict_unlocked(review),
            # After the verdict only (`may_see_flags_of`): blind until then.
            "speech_flags": reports.speech_flags(review.take.qc) if may_see_flags_of(review) else [],
            "remaining": waiting,
            "progress": QueueProgress(done, done + waiting) if not given else None,
        },
        status=400 if request.method == "POST" else 200,
    )


@role_required(Role.REVIEWER)
@require_POST
def review_played(request: StudioRequest, review_id: uuid.UUID) -> JsonResponse:
    """The browser reports that the take played to the end; the verdict buttons may unlock."""
    review = review_for_reviewer(request.user, review_id)
    try:
        record_playback(review)
    except PlaybackRequired as refused:
        return JsonResponse({"unlocked": False, "error": str(refused)}, status=409)
    return JsonResponse({"unlocked": True})


# --- Admin ----------------------------------------------------------------------------------------


@role_required(Role.ADMIN)
def import_items_page(request: StudioRequest) -> HttpResponse:
    """Upload a CSV or JSONL file of items; show what was imported or every row's problem."""
    form = ItemImportForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        valid_rows = form.cleaned_data["import_valid_rows"]
        if upload.size > MAX_IMPORT_BYTES:
            form.add_error("file", f"The file is larger than {MAX_IMPORT_BYTES // 2**30} GB; split it.")
        elif upload.size > SYNC_IMPORT_BYTES:
            # Too long for one request: a job imports it (same function, same report) with progress.
            job = start_item_import(upload, started_by=request.user, import_valid_rows=valid_rows)
            messages.success(
                request, f"The file is large: import #{job.pk} runs as a job; its page shows progress."
            )
            return redirect("job_detail", job_id=job.pk)
        else:
            # Streamed from the upload (Django spools large ones to disk): never read whole.
            report = import_items(cast(BinaryIO, upload), upload.name, import_valid_rows=valid_rows)
    return render(
        request,
        "annotation/recording/import.html",
        {
            "form": form,
            "report": report,
            "errors_shown": report.errors[:IMPORT_ERRORS_SHOWN] if report else [],
            "errors_hidden": max(0, len(report.errors) - IMPORT_ERRORS_SHOWN) if report else 0,
        },
    )


@role_required(Role.ADMIN)
def assign_items_page(request: StudioRequest) -> HttpResponse:
    """Hand out scripts to actors in bulk, balanced and respecting the scenario mix; or reassign."""
    form = AssignmentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        report: AssignmentReport = assign_items(form.items(), list(form.cleaned_data["actors"]))
        given = ", ".join(f"{name}: {count}" for name, count in report.assigned)
        messages.success(request, f"Assigned {sum(n for _, n in report.assigned)} scripts ({given}).")
        if report.skipped:
            messages.info(
                request, f"{report.skipped} scripts already in review or recorded kept their actor."
            )
        return redirect("annotation:assign_items")
    return render(request, "annotation/recording/assign.html", {"form": form, **reports.assignment_table()})


@role_required(Role.ADMIN)
def recording_dashboard(request: StudioRequest) -> HttpResponse:
    """Items per state, takes per actor with acceptance rates, reviewers' load and agreement."""
    return render(request, "annotation/recording/dashboard.html", reports.recording_dashboard())
