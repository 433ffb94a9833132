"""Pages of the recording studio: actors' scripts and recorder, blind review, takes, and the admin side."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, Q
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.audio.acoustics import MIN_TAKES_FOR_LEVELS
from annotation.audio.upload import ACCEPTED_FORMATS_TEXT
from annotation.recording.access import item_for_actor, review_for_reviewer, take_for_viewer, users_with_role
from annotation.recording.forms import AssignmentForm, ItemImportForm, ReviewerChoiceForm, VerdictForm
from annotation.recording.items import AssignmentReport, assign_items, import_items
from annotation.recording.models import Item, Review, Scenario, Take
from annotation.recording.reports import acceptance_rate, verdict_agreement
from annotation.recording.reviews import (
    REVIEWS_PER_TAKE,
    ReviewFeedback,
    ReviewNotFound,
    ReviewProblem,
    add_reviewer,
    eligible_reviewers,
    feedback_from,
    open_reviews,
    replace_reviewer,
    submit_verdict,
)
from annotation.recording.takes import restart_analysis, upload_limits
from webapp.http import StudioRequest
from webapp.models import JobStatus
from webapp.roles import Role, has_role, role_required
from webapp.storage import audio_url

ACTOR_TABS = {
    "to_record": ("To record", [Item.State.RECORDING]),
    "in_review": ("In review", [Item.State.IN_REVIEW]),
    "accepted": ("Accepted", [Item.State.RECORDED, Item.State.ANNOTATING, Item.State.GOLD]),
}
SCRIPTS_PER_PAGE = 25
MAX_IMPORT_BYTES = 20 * 1024 * 1024
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


def _take_rows(takes: list[Take]) -> list[TakeRow]:
    decided = (Take.Status.ACCEPTED, Take.Status.REJECTED)
    return [
        TakeRow(
            take,
            audio_url(take.audio_key),
            feedback_from(take.reviews.all()) if take.status in decided else None,
        )
        for take in takes
    ]


def _scripts_with_takes(items: Any, actor_id: int) -> list[ScriptRow]:
    own_takes = Take.objects.filter(actor_id=actor_id).prefetch_related("reviews").order_by("-created_at")
    with_takes = items.prefetch_related(Prefetch("takes", queryset=own_takes, to_attr="own_takes"))
    return [ScriptRow(item, _take_rows(item.own_takes)) for item in with_takes]


# --- Actors ---------------------------------------------------------------------------------------


@role_required(Role.VOICE_ACTOR)
def actor_queue(request: StudioRequest) -> HttpResponse:
    """The actor's assigned scripts by stage, each with the history of their takes and the reasons."""
    tab = request.GET.get("tab", "to_record")
    if tab not in ACTOR_TABS:
        tab = "to_record"
    mine = Item.objects.filter(actor=request.user)
    counts = dict(mine.values_list("state").annotate(n=Count("pk")).values_list("state", "n"))
    tabs = [
        (key, label, sum(counts.get(state, 0) for state in states))
        for key, (label, states) in ACTOR_TABS.items()
    ]
    page = Paginator(
        mine.filter(state__in=ACTOR_TABS[tab][1]).order_by("external_id"), SCRIPTS_PER_PAGE
    ).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/actor_queue.html",
        {
            "tab": tab,
            "tabs": tabs,
            "page": page,
            "scripts": _scripts_with_takes(page.object_list, request.user.pk),
        },
    )


@role_required(Role.VOICE_ACTOR)
def record_item(request: StudioRequest, external_id: str) -> HttpResponse:
    """One script: what to perform, the recorder, and the takes so far (htmx refreshes the history)."""
    item = item_for_actor(request.user, external_id)
    own_takes = list(Take.objects.filter(item=item, actor=request.user).prefetch_related("reviews"))
    context = {
        "item": item,
        "takes": _take_rows(own_takes),
        "analysing": any(take.status == Take.Status.ANALYSING for take in own_takes),
        "upload_url": reverse("annotation:api_item_takes", args=[item.external_id]),
        "formats": ACCEPTED_FORMATS_TEXT,
        "limits": upload_limits(),
    }
    template = (
        "annotation/recording/record.html#take-history"
        if request.htmx
        else "annotation/recording/record.html"
    )
    return render(request, template, context)


# --- Takes ----------------------------------------------------------------------------------------


def _number(value: object, digits: int, unit: str) -> str:
    return f"{value:.{digits}f} {unit}".strip() if isinstance(value, int | float) else "—"


def qc_rows(qc: dict[str, Any]) -> list[tuple[str, str]]:
    """Return the QC measurements of a take as (label, display) pairs; empty before analysis."""
    if not qc:
        return []
    return [
        ("Duration", _number(qc.get("duration_seconds"), 2, "s")),
        ("Peak", _number(qc.get("peak_dbfs"), 1, "dBFS")),
        ("RMS level", _number(qc.get("rms_dbfs"), 1, "dBFS")),
        ("Integrated loudness", _number(qc.get("integrated_loudness_lufs"), 1, "LUFS")),
        ("Clipped samples", _number(100 * qc.get("clipping_ratio", 0.0), 2, "%")),
        ("Silence", _number(100 * qc.get("silence_ratio", 0.0), 0, "%")),
    ]


def feature_rows(features: dict[str, Any]) -> list[tuple[str, str]]:
    """Return the acoustic features of a take as (label, display) pairs; empty before analysis."""
    if not features:
        return []
    compared = int(features.get("levels_compared_with", 0))
    if compared >= MIN_TAKES_FOR_LEVELS:
        levels = (
            ", ".join(
                f"{name} {features.get(f'{name}_level') or '—'}" for name in ("pitch", "energy", "rate")
            )
            + f" (against {compared} takes)"
        )
    else:
        levels = f"needs {MIN_TAKES_FOR_LEVELS} other analysed takes ({compared} so far)"
    pitch = _number(features.get("median_f0_hz"), 0, "Hz")
    if isinstance(features.get("f0_range_semitones"), int | float):
        pitch += f" (range {features['f0_range_semitones']:.1f} semitones)"
    return [
        ("Median pitch", pitch),
        ("Intonation", str(features.get("intonation") or "—")),
        ("Speaking rate", _number(features.get("words_per_second"), 2, "words/s")),
        ("Voiced", _number(100 * features.get("voiced_ratio", 0.0), 0, "%")),
        ("Mean intensity", _number(features.get("mean_intensity_db"), 1, "dB")),
        ("Against the speaker's other takes", levels),
    ]


@role_required(Role.ADMIN, Role.VOICE_ACTOR)
def take_detail(request: StudioRequest, public_id: uuid.UUID) -> HttpResponse:
    """A take's waveform with its pitch and energy contours, its measurements and its reviews."""
    take = take_for_viewer(request.user, public_id)
    is_admin = has_role(request.user, Role.ADMIN)
    reviews = list(take.reviews.select_related("reviewer"))
    context: dict[str, Any] = {
        "take": take,
        "item": take.item,
        "is_admin": is_admin,
        "audio_url": audio_url(take.audio_key),
        "contours": take.contours or None,
        "qc_rows": qc_rows(take.qc),
        "feature_rows": feature_rows(take.features),
        "feedback": feedback_from(reviews)
        if take.status in (Take.Status.ACCEPTED, Take.Status.REJECTED)
        else None,
    }
    if is_admin:
        candidates = eligible_reviewers(take)
        context.update(
            {
                "original_url": audio_url(take.original_key),
                "reviews": reviews,
                "reviewer_form": ReviewerChoiceForm(candidates=candidates),
                "can_add_reviewer": take.status == Take.Status.IN_REVIEW and len(reviews) < REVIEWS_PER_TAKE,
                "can_change_reviewers": take.status == Take.Status.IN_REVIEW and candidates.exists(),
                "analysis_failed": take.status == Take.Status.ANALYSING
                and (
                    take.analysis_job is None
                    or take.analysis_job.status in (JobStatus.FAILED, JobStatus.CANCELLED)
                ),
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
    if take.status != Take.Status.ANALYSING:
        messages.error(request, "Only a take still waiting for its analysis can be analysed again.")
        return redirect("annotation:take_detail", public_id=take.public_id)
    job = restart_analysis(take, request.user)
    return redirect("job_detail", job_id=job.pk)


# --- Reviewers ------------------------------------------------------------------------------------


@role_required(Role.REVIEWER)
def review_queue(request: StudioRequest) -> HttpResponse:
    """Takes waiting for this reviewer's verdict: the scripts only, nothing about who recorded them."""
    pending = open_reviews(request.user).select_related("take__item")
    done = Review.objects.filter(reviewer=request.user).exclude(verdict=Review.Verdict.PENDING).count()
    return render(request, "annotation/review_queue.html", {"pending": pending, "done": done})


@role_required(Role.REVIEWER)
def review_take(request: StudioRequest, review_id: int) -> HttpResponse:
    """Listen to one take blind and accept or reject it; then on to the next one."""
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
            following = open_reviews(request.user).first()
            if following is not None:
                return redirect("annotation:review_take", review_id=following.pk)
            return redirect("annotation:review_queue")
        review = review_for_reviewer(request.user, review_id)
    is_open = review.verdict == Review.Verdict.PENDING and review.take.status == Take.Status.IN_REVIEW
    remaining = open_reviews(request.user).count()
    return render(
        request,
        "annotation/recording/review.html",
        {
            "review": review,
            "item": review.take.item,
            "audio_url": audio_url(review.take.audio_key),
            "form": form,
            "is_open": is_open,
            "remaining": remaining,
        },
        status=400 if request.method == "POST" else 200,
    )


# --- Admin ----------------------------------------------------------------------------------------


@role_required(Role.ADMIN)
def import_items_page(request: StudioRequest) -> HttpResponse:
    """Upload a CSV or JSONL file of items; show what was imported or every row's problem."""
    form = ItemImportForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            form.add_error(
                "file", f"The file is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB; split it."
            )
        else:
            report = import_items(
                upload.read(), upload.name, import_valid_rows=form.cleaned_data["import_valid_rows"]
            )
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
    return render(request, "annotation/recording/assign.html", {"form": form, **_assignment_table()})


def _assignment_table() -> dict[str, Any]:
    scenarios = list(Scenario.choices)
    by_actor: dict[int, dict[str, int]] = defaultdict(dict)
    for actor_id, scenario, count in (
        Item.objects.filter(actor__isnull=False).values_list("actor", "scenario").annotate(n=Count("pk"))
    ):
        by_actor[actor_id][scenario] = count
    unassigned = dict(
        Item.objects.filter(actor__isnull=True)
        .values_list("scenario")
        .annotate(n=Count("pk"))
        .values_list("scenario", "n")
    )
    rows = [
        (
            actor,
            [by_actor[actor.pk].get(value, 0) for value, _ in scenarios],
            sum(by_actor[actor.pk].values()),
        )
        for actor in users_with_role(Role.VOICE_ACTOR)
    ]
    return {
        "scenarios": scenarios,
        "actor_rows": rows,
        "unassigned": [unassigned.get(value, 0) for value, _ in scenarios],
        "unassigned_total": sum(unassigned.values()),
    }


@role_required(Role.ADMIN)
def recording_dashboard(request: StudioRequest) -> HttpResponse:
    """Items per state, takes per actor with acceptance rates, reviewers' load and agreement."""
    state_counts = dict(Item.objects.values_list("state").annotate(n=Count("pk")).values_list("state", "n"))
    item_states = [(label, state_counts.get(value, 0)) for value, label in Item.State.choices]

    per_actor = (
        Take.objects.values("actor", "actor__username", "actor__display_name")
        .annotate(
            total=Count("pk"),
            accepted=Count("pk", filter=Q(status=Take.Status.ACCEPTED)),
            rejected=Count("pk", filter=Q(status=Take.Status.REJECTED)),
            waiting=Count("pk", filter=Q(status__in=[Take.Status.ANALYSING, Take.Status.IN_REVIEW])),
        )
        .order_by("actor")
    )
    actor_rows = [
        {
            **row,
            "name": row["actor__display_name"] or row["actor__username"],
            "rate": acceptance_rate(row["accepted"], row["rejected"]),
        }
        for row in per_actor
    ]

    reviewer_rows = [
        {"name": str(user), "open": user.open_reviews, "accepts": user.accepts, "rejects": user.rejects}
        for user in users_with_role(Role.REVIEWER).annotate(
            open_reviews=Count(
                "reviews",
                filter=Q(
                    reviews__verdict=Review.Verdict.PENDING, reviews__take__status=Take.Status.IN_REVIEW
                ),
            ),
            accepts=Count("reviews", filter=Q(reviews__verdict=Review.Verdict.ACCEPT)),
            rejects=Count("reviews", filter=Q(reviews__verdict=Review.Verdict.REJECT)),
        )
    ]

    verdicts: dict[int, list[str]] = defaultdict(list)
    for take_id, verdict in Review.objects.filter(
        take__status__in=[Take.Status.ACCEPTED, Take.Status.REJECTED]
    ).values_list("take_id", "verdict"):
        verdicts[take_id].append(verdict)
    agreement = verdict_agreement(verdicts.values(), REVIEWS_PER_TAKE)

    short_of_reviewers = (
        Take.objects.filter(status=Take.Status.IN_REVIEW)
        .annotate(n=Count("reviews"))
        .filter(n__lt=REVIEWS_PER_TAKE)
        .select_related("item")[:50]
    )
    stuck = Take.objects.filter(
        status=Take.Status.ANALYSING, analysis_job__status__in=[JobStatus.FAILED, JobStatus.CANCELLED]
    ).select_related("item")[:50]
    charts = {
        "states": {"labels": [label for label, _ in item_states], "counts": [n for _, n in item_states]},
        "actors": {
            "labels": [row["name"] for row in actor_rows],
            "accepted": [row["accepted"] for row in actor_rows],
            "rejected": [row["rejected"] for row in actor_rows],
            "waiting": [row["waiting"] for row in actor_rows],
        },
        "reviewers": {
            "labels": [row["name"] for row in reviewer_rows],
            "open": [row["open"] for row in reviewer_rows],
            "accepts": [row["accepts"] for row in reviewer_rows],
            "rejects": [row["rejects"] for row in reviewer_rows],
        },
    }
    return render(
        request,
        "annotation/recording/dashboard.html",
        {
            "item_states": item_states,
            "actor_rows": actor_rows,
            "reviewer_rows": reviewer_rows,
            "agreement": agreement,
            "short_of_reviewers": short_of_reviewers,
            "stuck": stuck,
            "charts": charts,
            "reviews_per_take": REVIEWS_PER_TAKE,
        },
    )
