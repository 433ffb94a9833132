"""Pages of a crowd study: the external rater's journey, and the admin's link, raters and payments.

A rater arrives on `entry` from their platform's link, and from then on every page is `step`,
which shows the page of their stage (`workflows.stage_of`): consent, the headphone screen, the
digits-in-noise check, the study's trials (the same rating pages evaluators use, for their
seat's assignments), and the end with the platform's code and return link.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evaluation.studies.access import study_for_admin
from evaluation.studies.crowd import digits, headphones
from evaluation.studies.crowd.access import (
    assignment_for_crowd_rater,
    bind,
    personal_token,
    rater_for,
    refresh_stand_in,
    slot_for_crowd_rater,
    throttled,
    token_rater,
)
from evaluation.studies.crowd.forms import CrowdLinkForm
from evaluation.studies.crowd.models import CrowdLink, CrowdRater, CrowdScreening
from evaluation.studies.crowd.platforms import (
    EntryProblem,
    Platform,
    Preview,
    has_entry_parameters,
    read_entry,
    return_url,
)
from evaluation.studies.crowd.reports import bulk_bonus_lines, payment_sheet_csv, rater_rows
from evaluation.studies.crowd.workflows import (
    Stage,
    digit_triplets,
    enter,
    give_consent,
    grade_screening,
    headphone_trials,
    open_to_crowd,
    screening_for,
    stage_of,
)
from evaluation.studies.design import StudyDesignError
from evaluation.studies.models import StudyAssignment
from evaluation.studies.reports import rater_progress
from evaluation.studies.views import (
    dialogue_context,
    rating_context,
    scores_from,
    slot_played_reply,
    trial_answers_from,
    trial_context,
)
from evaluation.studies.workflows import (
    RatingRefused,
    present,
    record_playback,
    record_turn_playback,
    submit_rating,
    submit_trial,
    submit_turn_rating,
)
from webapp.http import StudioRequest
from webapp.roles import Role, role_required


def _problem(request: HttpRequest, title: str, message: str, status: int = 400) -> HttpResponse:
    return render(
        request, "evaluation/studies/crowd/problem.html", {"title": title, "message": message}, status=status
    )


@require_GET
@never_cache
@throttled
def entry(request: HttpRequest, link: CrowdLink) -> HttpResponse:
    """Admit the rater the platform's parameters name (or resume this browser's), then send them on."""
    platform = Platform(link.platform)
    if not has_entry_parameters(platform, request.GET) and rater_for(request, link) is not None:
        return redirect("evaluation:crowd_step", token=link.token)
    try:
        arrival = read_entry(platform, request.GET, token_rater(link))
    except EntryProblem as problem:
        return _problem(request, "This link is not complete", str(problem))
    if isinstance(arrival, Preview):
        return render(request, "evaluation/studies/crowd/preview.html", {"study": link.study})
    known = rater_for(request, link)
    if not link.is_open and (known is None or known.external_id != arrival.external_id):
        return _problem(request, "This study is closed", "It takes no new participants.", status=410)
    rater = enter(link, arrival)
    bind(request, rater)
    return redirect("evaluation:crowd_step", token=link.token)


def session_rater(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Hand the view this session's rater on the link (after `throttled`); a browser that has not
    started the study from its invitation gets a page that says so (403)."""

    @wraps(view)
    def wrapper(request: HttpRequest, link: CrowdLink, *args: Any, **kwargs: Any) -> HttpResponse:
        rater = rater_for(request, link)
        if rater is None:
            return _problem(
                request,
                "Open the study from your invitation",
                "This browser has not started this study. Open it again from the platform's link.",
                status=403,
            )
        return view(request, link, rater, *args, **kwargs)

    return wrapper


@require_GET
@never_cache
@throttled
@session_rater
def step(request: HttpRequest, link: CrowdLink, rater: CrowdRater) -> HttpResponse:
    """The page of the rater's stage."""
    stage = stage_of(rater)
    refresh_stand_in(request, rater)
    context: dict[str, Any] = {"link": link, "study": link.study, "rater": rater}
    if stage == Stage.CONSENT:
        return render(request, "evaluation/studies/crowd/consent.html", context)
    if stage in (Stage.HEADPHONES, Stage.DIGITS):
        screening = screening_for(rater, CrowdScreening.Test(stage.value))
        context.update(screening=screening, trials=range(1, len(screening.trials) + 1))
        return render(request, f"evaluation/studies/crowd/{stage.value}.html", context)
    if stage == Stage.FULL:
        return _problem(request, "The study is full", "Every place is taken. Please return the study.", 409)
    if stage in (Stage.DONE, Stage.SCREENED_OUT):
        return _the_end(request, link, rater, stage)
    return _trial(request, link, rater)


def _the_end(request: HttpRequest, link: CrowdLink, rater: CrowdRater, stage: Stage) -> HttpResponse:
    done = stage == Stage.DONE
    code = link.completion_code if done else link.screened_out_code
    url = return_url(Platform(link.platform), link.completion_url if done else link.screened_out_url, code)
    context = {"study": link.study, "done": done, "code": code, "return_url": url}
    return render(request, "evaluation/studies/crowd/end.html", context)


def _trial(request: HttpRequest, link: CrowdLink, rater: CrowdRater) -> HttpResponse:
    """The rater's next trial, on the page the study's trial type uses for anyone's assignment
    (`rating_context`, `dialogue_context`, `trial_context`), posting to the crowd's routes instead
    of the evaluator's."""
    assert rater.seat is not None  # stage RATING holds a seat
    study, seat_user = link.study, rater.seat.user
    assignment = StudyAssignment.objects.next_for(study, seat_user)
    assert assignment is not None  # stage RATING has work left (else DONE)
    present(assignment)
    progress = rater_progress(study, seat_user)
    token, sample = link.token, assignment.public_id
    if study.is_comparison:
        context = trial_context(study, assignment, progress, seat_user)
        for entry in [context["reference"], *context["samples"]]:
            if entry is not None:
                entry["played_url"] = reverse(
                    "evaluation:crowd_slot_played", args=[token, entry["slot"].public_id]
                )
        context.update(submit_url=reverse("evaluation:crowd_submit_trial", args=[token, sample]), stop_url="")
        return render(request, "evaluation/studies/rate_trial.html", context)
    if study.is_dialogue:
        context = dialogue_context(study, assignment, progress, seat_user)
        for turn in context["turns"]:
            turn["played_url"] = reverse("evaluation:crowd_turn_played", args=[token, sample, turn["number"]])
            turn["submit_url"] = reverse("evaluation:crowd_submit_turn", args=[token, sample, turn["number"]])
        context["stop_url"] = ""
        return render(request, "evaluation/studies/rate_dialogue.html", context)
    context = rating_context(study, assignment, progress, seat_user)
    context.update(
        played_url=reverse("evaluation:crowd_played", args=[token, sample]),
        submit_url=reverse("evaluation:crowd_submit", args=[token, sample]),
        stop_url="",
    )
    return render(request, "evaluation/studies/rate.html", context)


@require_POST
@throttled
@session_rater
def consent(request: HttpRequest, link: CrowdLink, rater: CrowdRater) -> HttpResponse:
    """Record that the rater agreed to take part."""
    if request.POST.get("agree") == "yes":
        give_consent(rater)
    return redirect("evaluation:crowd_step", token=link.token)


@require_GET
@throttled
@session_rater
def screen_audio(
    request: HttpRequest, link: CrowdLink, rater: CrowdRater, test: str, number: int
) -> HttpResponse:
    """One trial of the rater's open screening, as WAV."""
    screening = rater.screenings.filter(test=test, finished_at__isnull=True).first()
    if screening is None or not 1 <= number <= len(screening.trials):
        return _problem(request, "No such sound", "This check is finished or has no such trial.", 404)
    if screening.test == CrowdScreening.Test.HEADPHONES:
        data = headphones.trial_wav(headphone_trials(screening)[number - 1])
    else:
        data = digits.triplet_wav(digit_triplets(screening)[number - 1], screening.seed + number)
    response = HttpResponse(data, content_type="audio/wav")
    response["Cache-Control"] = "private, no-store"
    return response


@require_POST
@throttled
@session_rater
def screen_answer(request: HttpRequest, link: CrowdLink, rater: CrowdRater, test: str) -> HttpResponse:
    """Grade the rater's answers to their open screening of `test`."""
    screening = rater.screenings.filter(test=test, finished_at__isnull=True).first()
    if screening is not None:
        answers = [
            request.POST.get(f"trial_{n}", "").strip()[:20] for n in range(1, len(screening.trials) + 1)
        ]
        grade_screening(screening.pk, answers)
    return redirect("evaluation:crowd_step", token=link.token)


@require_POST
@throttled
@session_rater
def played(request: HttpRequest, link: CrowdLink, rater: CrowdRater, public_id: UUID) -> HttpResponse:
    """The browser reports that the sample played to the end (`workflows.record_playback`)."""
    assignment = assignment_for_crowd_rater(rater, public_id)
    return _playback_answer(lambda: record_playback(assignment))


@require_POST
@throttled
@session_rater
def submit(request: HttpRequest, link: CrowdLink, rater: CrowdRater, public_id: UUID) -> HttpResponse:
    """Store the rater's scores of one sample; the same submission twice stores it once."""
    assignment = assignment_for_crowd_rater(rater, public_id)
    _store_once(
        request,
        rater,
        lambda: submit_rating(assignment.pk, scores_from(request, assignment.study)),
        lambda: _submitted(assignment),
    )
    return redirect("evaluation:crowd_step", token=link.token)


@require_POST
@throttled
@session_rater
def slot_played(request: HttpRequest, link: CrowdLink, rater: CrowdRater, public_id: UUID) -> HttpResponse:
    """The browser reports that one sample of a comparison trial played to the end
    (`workflows.record_slot_playback`)."""
    return slot_played_reply(slot_for_crowd_rater(rater, public_id))


@require_POST
@throttled
@session_rater
def submit_answer(request: HttpRequest, link: CrowdLink, rater: CrowdRater, public_id: UUID) -> HttpResponse:
    """Store the rater's answer to one comparison trial; the same submission twice stores it once."""
    assignment = assignment_for_crowd_rater(rater, public_id)
    _store_once(
        request,
        rater,
        lambda: submit_trial(assignment.pk, trial_answers_from(request)),
        lambda: _submitted(assignment),
    )
    return redirect("evaluation:crowd_step", token=link.token)


@require_POST
@throttled
@session_rater
def turn_played(
    request: HttpRequest, link: CrowdLink, rater: CrowdRater, public_id: UUID, turn: int
) -> HttpResponse:
    """The browser reports that a dialogue turn's reply played to the end (`workflows.record_turn_playback`)."""
    assignment = assignment_for_crowd_rater(rater, public_id)
    return _playback_answer(lambda: record_turn_playback(assignment, turn))


@require_POST
@throttled
@session_rater
def submit_turn(
    request: HttpRequest, link: CrowdLink, rater: CrowdRater, public_id: UUID, turn: int
) -> HttpResponse:
    """Store the scores of one assistant turn; the same submission twice stores it once."""
    assignment = assignment_for_crowd_rater(rater, public_id)
    stored = _store_once(
        request,
        rater,
        lambda: submit_turn_rating(assignment.pk, turn, scores_from(request, assignment.study)),
        lambda: assignment.ratings.filter(turn=turn).exists(),
    )
    anchor = turn + 1 if stored else turn
    return redirect(f"{reverse('evaluation:crowd_step', args=[link.token])}#turn-{anchor}")


def _playback_answer(record: Callable[[], object]) -> JsonResponse:
    """Answer a browser's playback report: unlocked, or refused with the reason (409)."""
    try:
        record()
    except RatingRefused as refused:
        return JsonResponse({"unlocked": False, "error": str(refused)}, status=409)
    return JsonResponse({"unlocked": True})


def _store_once(
    request: HttpRequest, rater: CrowdRater, store: Callable[[], object], stored: Callable[[], bool]
) -> bool:
    """Store a submission of a rater still at work; return False when it was refused for the rater
    to fix (the reason shown). A repeat of a stored submission (a retried request, a double click)
    is answered as the first was: on to the next."""
    if rater.completed_at is not None or rater.screened_out_at is not None:
        return True
    try:
        store()
    except RatingRefused as refused:
        if not stored():
            messages.error(request, str(refused))
            return False
    return True


def _submitted(assignment: StudyAssignment) -> bool:
    return StudyAssignment.objects.filter(pk=assignment.pk, submitted_at__isnull=False).exists()


# --- Admin --------------------------------------------------------------------------------------


@role_required(Role.ADMIN)
@never_cache
def crowd_admin(request: StudioRequest, study_id: int) -> HttpResponse:
    """Open the study to external raters, read the links to give the platform, and follow raters."""
    study = study_for_admin(study_id)
    link = CrowdLink.objects.filter(study=study).first()
    form = CrowdLinkForm(request.POST or None)
    if request.method == "POST" and link is None and form.is_valid():
        data = form.cleaned_data
        try:
            open_to_crowd(
                study,
                data["seats"],
                Platform(data["platform"]),
                completion_url=data["completion_url"],
                screened_out_url=data["screened_out_url"],
                bonus=data["bonus"],
                requests_per_minute=data["requests_per_minute"],
                ratings_per_output=data["ratings_per_output"],
            )
        except StudyDesignError as problem:
            form.add_error(None, str(problem))
        else:
            return redirect("evaluation:crowd_admin", study_id=study.pk)
    context: dict[str, Any] = {"study": study, "link": link, "form": form}
    if link is not None:
        base = request.build_absolute_uri(reverse("evaluation:crowd_entry", args=[link.token]))
        context.update(
            entry_url=base + _PLATFORM_QUERY[Platform(link.platform)],
            personal_links=[
                f"{base}?token={personal_token(link, n)}"
                for n in range(1, link.study.crowd_seats.count() + 1)
            ]
            if link.platform == Platform.GENERIC
            else [],
            rows=rater_rows(link),
        )
    return render(request, "evaluation/studies/crowd/admin.html", context)


# What to paste in the platform: Prolific fills its {{%...%}} placeholders; MTurk's external
# question appends its own parameters.
_PLATFORM_QUERY = {
    Platform.PROLIFIC: "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
    Platform.MTURK: "",
    Platform.GENERIC: "",
}


@role_required(Role.ADMIN)
def payment_sheet(request: StudioRequest, study_id: int) -> HttpResponse:
    """Each external rater's id, status, time on task and bonus, as CSV."""
    link = get_object_or_404(CrowdLink, study=study_for_admin(study_id))
    response = HttpResponse(payment_sheet_csv(link), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study_id}-payments.csv"'
    return response


@role_required(Role.ADMIN)
def bulk_bonus(request: StudioRequest, study_id: int) -> HttpResponse:
    """The lines to paste in Prolific's bulk bonus box: `participant_id,amount`."""
    link = get_object_or_404(CrowdLink, study=study_for_admin(study_id))
    response = HttpResponse(bulk_bonus_lines(link), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study_id}-bonuses.csv"'
    return response
