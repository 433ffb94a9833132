"""Pages of human listening studies: admins design studies and read results, evaluators rate blind.

Everything an evaluator's browser receives is built in `rating_context` and the JSON replies
below: stimuli travel under their random public ids and blind audio links
(`evaluation.outputs.access`), never with a system.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from annotation.audio.speech.loudness import STUDY_LEVEL_LUFS
from evaluation.outputs.access import blind_audio_url, query_audio_url
from evaluation.studies import reports
from evaluation.studies.access import (
    assignment_for_rater,
    rating_unlocked,
    slot_for_rater,
    study_for_admin,
    study_for_rater,
    trial_refusal,
)
from evaluation.studies.comparison_reports import (
    comparison_figures,
    comparison_results_context,
    figures_csv,
    figures_json,
)
from evaluation.studies.creation.items import create_study
from evaluation.studies.design import Dimension, StudyDesignError
from evaluation.studies.forms import StudyForm
from evaluation.studies.models import Study, StudyAssignment, StudyRater, StudySlot, StudyStimulus, StudyTurn
from evaluation.studies.reports import Progress, rater_progress, study_figures
from evaluation.studies.results import summary_csv
from evaluation.studies.trials import MUSHRA_BANDS, PAIR_CHOICES, slot_label
from evaluation.studies.workflows import (
    RatingRefused,
    decide_rater,
    present,
    record_playback,
    record_slot_playback,
    record_turn_playback,
    submit_rating,
    submit_trial,
    submit_turn_rating,
    turn_playbacks,
)
from webapp.http import StudioRequest
from webapp.models import User
from webapp.roles import Role, role_required

# --- Evaluator ----------------------------------------------------------------------------------


@role_required(Role.EVALUATOR)
def evaluator_queue(request: StudioRequest) -> HttpResponse:
    """The studies the evaluator was invited to, each with how far they have got."""
    studies = reports.evaluator_studies(request.user)
    return render(request, "evaluation/evaluator_queue.html", {"studies": studies})


@role_required(Role.EVALUATOR)
@never_cache
def rate_study(request: StudioRequest, public_id: UUID) -> HttpResponse:
    """The evaluator's next sample in the study, or the end page when every sample is rated."""
    study = study_for_rater(request.user, public_id)
    assignment = StudyAssignment.objects.next_for(study, request.user)
    progress = rater_progress(study, request.user)
    if assignment is None:
        return render(request, "evaluation/studies/done.html", {"study": study, "progress": progress})
    present(assignment)
    if study.is_comparison:
        return render(
            request,
            "evaluation/studies/rate_trial.html",
            trial_context(study, assignment, progress, request.user),
        )
    if study.is_dialogue:
        return render(
            request,
            "evaluation/studies/rate_dialogue.html",
            dialogue_context(study, assignment, progress, request.user),
        )
    return render(
        request, "evaluation/studies/rate.html", rating_context(study, assignment, progress, request.user)
    )


def rating_context(
    study: Study, assignment: StudyAssignment, progress: Progress, viewer: User
) -> dict[str, Any]:
    """Return what the ACR rating page shows of one assignment, blind, with its audio signed for
    `viewer` (the assignment's holder: an evaluator, or a crowd rater's seat). The page posts to
    `played_url` and `submit_url`: the evaluator's routes here, the crowd's in `studies.crowd`."""
    stimulus = assignment.stimulus
    query = stimulus.item
    return {
        "study": study,
        "assignment": assignment,
        "progress": progress,
        "questions": rating_questions(study.dimension_list()),
        "practice": stimulus.kind == stimulus.Kind.TRAINING,
        "query_text": query.text,
        "query_audio_url": query_audio_url(query, viewer),
        "response_text": stimulus.response_text if study.rates_content() else "",
        "response_audio_url": blind_audio_url(stimulus.audio_key, viewer),
        "unlocked": rating_unlocked(assignment),
        "first_visit": progress.done == 0,
        "played_url": reverse("evaluation:assignment_played", args=[assignment.public_id]),
        "submit_url": reverse("evaluation:submit_assignment", args=[assignment.public_id]),
        "stop_url": reverse("evaluation:evaluator_queue"),
    }


def trial_context(
    study: Study, assignment: StudyAssignment, progress: Progress, viewer: User
) -> dict[str, Any]:
    """A comparison trial as the rater sees it: each slot under its place label ("A", "Sample 2")
    with a blind audio link signed for `viewer` (an evaluator, or a crowd rater's seat), reached by
    the slot's random id; no system, no role (the hidden reference and anchors look like any other
    sample). Each slot posts to its `played_url` and the answer to `submit_url`: the evaluator's
    routes here, the crowd's in `studies.crowd`."""
    slots = list(assignment.slots.select_related("part__sample").order_by("position"))
    pairs = study.is_pairs
    entries: list[dict[str, Any]] = [
        {
            "slot": slot,
            "label": slot_label(pairs, slot.position),
            "audio_url": blind_audio_url(slot.part.sample.audio_key, viewer),
            "played": slot.played_at is not None,
            "played_url": reverse("evaluation:slot_played", args=[slot.public_id]),
        }
        for slot in slots
    ]
    query = assignment.stimulus.item
    return {
        "study": study,
        "assignment": assignment,
        "progress": progress,
        "dimension": study.dimension_list()[0],
        "reference": next(
            (entry for entry, slot in zip(entries, slots, strict=True) if slot.position == 0), None
        ),
        "samples": [entry for entry, slot in zip(entries, slots, strict=True) if slot.position > 0],
        "choices": PAIR_CHOICES.get(study.kind, ()),
        "bands": MUSHRA_BANDS,
        "practice": assignment.stimulus.kind == StudyStimulus.Kind.TRAINING,
        "query_text": query.text,
        "unlocked": trial_refusal(assignment, slots) is None,
        "first_visit": progress.done == 0,
        "submit_url": reverse("evaluation:submit_trial", args=[assignment.public_id]),
        "stop_url": reverse("evaluation:evaluator_queue"),
    }


def dialogue_context(
    study: Study, assignment: StudyAssignment, progress: Progress, viewer: User
) -> dict[str, Any]:
    """The conversation as the rater hears it: per turn the user's recording and the system's
    reply (blind link, no system), with the current turn's questions open or locked by the playback
    gate. Each turn posts to its `played_url` and `submit_url`: the evaluator's routes here, the
    crowd's in `studies.crowd`."""
    played = turn_playbacks(assignment)
    scores: dict[int, dict[str, int]] = {}
    for turn, dimension, score in assignment.ratings.values_list("turn", "dimension", "score"):
        scores.setdefault(turn, {})[dimension] = score
    dimensions = study.dimension_list()
    replies = StudyTurn.objects.filter(stimulus=assignment.stimulus).select_related("item__recording")
    turns: list[dict[str, Any]] = [
        {
            "number": reply.turn,
            "user_text": reply.item.text,
            "user_audio_url": query_audio_url(reply.item, viewer),
            "reply_text": reply.response_text if study.rates_content() else "",
            "reply_audio_url": blind_audio_url(reply.audio_key, viewer),
            "unlocked": rating_unlocked(assignment, reply, played),
            "played_url": reverse("evaluation:turn_played", args=[assignment.public_id, reply.turn]),
            "submit_url": reverse("evaluation:submit_turn", args=[assignment.public_id, reply.turn]),
            "saved": [
                (dimension.label, scores[reply.turn][dimension.key])
                for dimension in dimensions
                if dimension.key in scores.get(reply.turn, {})
            ],
        }
        for reply in replies
    ]
    # One turn is worked on at a time, the first not yet rated: it opens in full with its questions,
    # the turns around it stay compact, so the page is as tall as the work rather than the dialogue.
    current = next((entry["number"] for entry in turns if not entry["saved"]), None)
    for entry in turns:
        entry["current"] = entry["number"] == current
        entry["later"] = current is not None and entry["number"] > current
    return {
        "study": study,
        "assignment": assignment,
        "progress": progress.with_turns(sum(1 for entry in turns if entry["saved"]), len(turns)),
        "questions": rating_questions(dimensions),
        "turns": turns,
        "practice": assignment.stimulus.kind == StudyStimulus.Kind.TRAINING,
        "first_visit": progress.done == 0 and not scores,
    }


@role_required(Role.EVALUATOR)
@require_POST
def turn_played(request: StudioRequest, public_id: UUID, turn: int) -> JsonResponse:
    """The browser reports that a dialogue turn's reply played to the end; its questions may unlock."""
    assignment = assignment_for_rater(request.user, public_id)
    try:
        record_turn_playback(assignment, turn)
    except RatingRefused as refused:
        return JsonResponse({"unlocked": False, "error": str(refused)}, status=409)
    return JsonResponse({"unlocked": True})


@role_required(Role.EVALUATOR)
@require_POST
def submit_turn(request: StudioRequest, public_id: UUID, turn: int) -> HttpResponse:
    """Store the scores of one assistant turn and return to the conversation (or the next sample)."""
    assignment = assignment_for_rater(request.user, public_id)
    try:
        submit_turn_rating(assignment.pk, turn, scores_from(request, assignment.study))
    except RatingRefused as refused:
        messages.error(request, str(refused))
        anchor = turn
    else:
        anchor = turn + 1
    url = reverse("evaluation:rate_study", kwargs={"public_id": assignment.study.public_id})
    return redirect(f"{url}#turn-{anchor}")


def scores_from(request: HttpRequest, study: Study) -> dict[str, int]:
    """Return the 1-5 scores a rating form posted, by dimension (non-numbers left out)."""
    scores: dict[str, int] = {}
    for key in study.dimensions:
        value = request.POST.get(f"score_{key}", "")
        if value.isdigit():
            scores[key] = int(value)
    return scores


@role_required(Role.EVALUATOR)
@require_POST
def assignment_played(request: StudioRequest, public_id: UUID) -> JsonResponse:
    """The browser reports that the response played to the end; the rating controls may unlock."""
    assignment = assignment_for_rater(request.user, public_id)
    try:
        record_playback(assignment)
    except RatingRefused as refused:
        return JsonResponse({"unlocked": False, "error": str(refused)}, status=409)
    return JsonResponse({"unlocked": True})


@role_required(Role.EVALUATOR)
@require_POST
def submit_assignment(request: StudioRequest, public_id: UUID) -> HttpResponse:
    """Store the scores of one sample and move on to the next."""
    assignment = assignment_for_rater(request.user, public_id)
    try:
        submit_rating(assignment.pk, scores_from(request, assignment.study))
    except RatingRefused as refused:
        messages.error(request, str(refused))
    return redirect("evaluation:rate_study", public_id=assignment.study.public_id)


@role_required(Role.EVALUATOR)
@require_POST
def slot_played(request: StudioRequest, public_id: UUID) -> JsonResponse:
    """The browser reports that one sample of a comparison trial played to the end."""
    return slot_played_reply(slot_for_rater(request.user, public_id))


@role_required(Role.EVALUATOR)
@require_POST
def submit_trial_answer(request: StudioRequest, public_id: UUID) -> HttpResponse:
    """Store the answer to one comparison trial and move on to the next."""
    assignment = assignment_for_rater(request.user, public_id)
    try:
        submit_trial(assignment.pk, trial_answers_from(request))
    except RatingRefused as refused:
        messages.error(request, str(refused))
    return redirect("evaluation:rate_study", public_id=assignment.study.public_id)


def trial_answers_from(request: HttpRequest) -> dict[int, int]:
    """Return the values a trial form posted, by the place they answer (`score_<place>`; others left out)."""
    answers: dict[int, int] = {}
    for name in request.POST:
        value = request.POST.get(name, "")
        place = name.removeprefix("score_")
        if name.startswith("score_") and place.isdigit() and value.lstrip("-").isdigit():
            answers[int(place)] = int(value)
    return answers


def slot_played_reply(slot: StudySlot) -> JsonResponse:
    """Record that one slot played to the end (`workflows.record_slot_playback`) and say whether
    the whole trial is now open."""
    try:
        record_slot_playback(slot.pk)
    except RatingRefused as refused:
        return JsonResponse({"unlocked": False, "error": str(refused)}, status=409)
    assignment = slot.assignment
    slots = list(StudySlot.objects.filter(assignment=assignment).select_related("part__sample"))
    return JsonResponse({"unlocked": True, "trial_unlocked": trial_refusal(assignment, slots) is None})


# --- Admin --------------------------------------------------------------------------------------


@role_required(Role.ADMIN)
def study_list(request: StudioRequest) -> HttpResponse:
    """Every study with how far its raters have got."""
    return render(request, "evaluation/studies/study_list.html", {"rows": reports.study_rows()})


@role_required(Role.ADMIN)
def study_create(request: StudioRequest) -> HttpResponse:
    """Design a study: systems, sampling, dimensions, raters and quality control."""
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = create_study(form.to_spec(), created_by=request.user)
        except StudyDesignError as problem:
            form.add_error(None, str(problem))
        else:
            messages.success(request, f"Study “{study.name}” is open to its raters.")
            return redirect("evaluation:study_results", study_id=study.pk)
    return render(request, "evaluation/studies/study_form.html", {"form": form})


@role_required(Role.ADMIN)
@never_cache
def study_results(request: StudioRequest, study_id: int) -> HttpResponse:
    """Rater screening with decisions, and the study's figures in the layout of the paper's Table 5."""
    study = study_for_admin(study_id)
    if study.is_comparison:
        return render(
            request, "evaluation/studies/comparison_results.html", comparison_results_context(study)
        )
    return render(request, "evaluation/studies/results.html", reports.study_results_context(study))


@role_required(Role.ADMIN)
@never_cache
def study_clips(request: StudioRequest, study_id: int) -> HttpResponse:
    """Every clip of the study as raters hear it (at the study's level) and at its own level."""
    study = study_for_admin(study_id)
    context = {"study": study, "clips": reports.study_clips(study, request.user), "level": STUDY_LEVEL_LUFS}
    return render(request, "evaluation/studies/clips.html", context)


@role_required(Role.ADMIN)
def study_results_csv(request: StudioRequest, study_id: int) -> HttpResponse:
    """Every figure of the study as CSV, each with the number of ratings it rests on."""
    study = study_for_admin(study_id)
    if study.is_comparison:
        text = figures_csv(comparison_figures(study))
    else:
        text = summary_csv(study_figures(study)[1])
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-results.csv"'
    return response


@role_required(Role.ADMIN)
def study_results_json(request: StudioRequest, study_id: int) -> JsonResponse:
    """A comparison study's figures as JSON: CMOS, Bradley–Terry and win rates, or MUSHRA boxes,
    with the excluded raters and why, and each rater's time on task."""
    study = study_for_admin(study_id)
    if not study.is_comparison:
        raise Http404("ACR studies export CSV and the results API.")
    response = JsonResponse(figures_json(comparison_figures(study)))
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-results.json"'
    return response


@role_required(Role.ADMIN)
@require_POST
def rater_decision(request: StudioRequest, study_id: int, evaluator_id: int) -> HttpResponse:
    """Include or exclude a rater from the study's figures after reading their screening."""
    study = study_for_admin(study_id)
    decision = request.POST.get("decision", "")
    if (
        decision not in StudyRater.Decision.values
        or not study.raters.filter(evaluator_id=evaluator_id).exists()
    ):
        raise Http404("No such rater or decision.")
    decide_rater(study, evaluator_id, decision, request.user, request.POST.get("note", "").strip())
    return redirect("evaluation:study_results", study_id=study.pk)


def rating_questions(dimensions: Sequence[Dimension]) -> list[dict[str, Any]]:
    """Return each dimension with its numbered anchors, as the rating pages ask them."""
    return [
        {"dimension": dimension, "choices": list(enumerate(dimension.anchors, start=1))}
        for dimension in dimensions
    ]
