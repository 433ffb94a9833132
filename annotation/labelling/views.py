"""The annotator's workbench: label an item, autosave as they type, submit, reopen.

Annotators only ever load their own annotation rows (`annotation.labelling.access.own_annotation`),
so another annotator's labels of the same item never reach their pages, before or after they
submit (the rule: `annotation.labelling.access.may_see_others_labels`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any

from django.contrib import messages
from django.db.models import QuerySet
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotation.audio.suggestions import gender_suggestion
from annotation.audio.voice_drafts import DRAFT_ACCURACY
from annotation.labelling import workflows
from annotation.labelling.access import own_annotation
from annotation.labelling.dialogue.context import dialogue_context
from annotation.labelling.drafts import drafts_enabled
from annotation.labelling.forms import (
    FormError,
    cross_turn_from_form,
    labels_from_form,
    page_session_from_form,
    strategy_choices,
    version_from_form,
)
from annotation.labelling.markup import (
    CONSTRAINT_CHIPS_HTML,
    choice_groups,
    problems_by_field,
    script_word_buttons,
    strategy_table_rows,
)
from annotation.labelling.models import Annotation, Strategy, counted_tabs, strategies_read_with, tab_counts
from annotation.labelling.schema import (
    CHOICES,
    LabelProblem,
    field_label,
)
from annotation.recording.models import Scenario
from annotation.recording.takes import page_tracks, window_of
from webapp.fixed_reads import INTEGER, MOMENT, FixedRead
from webapp.http import StudioRequest
from webapp.keyset import keyset_page_read, keyset_slice
from webapp.lib.progress import QueueProgress
from webapp.lib.vocabulary import CONFLICT_KINDS
from webapp.models import User
from webapp.roles import Role, role_required
from webapp.storage import audio_url

QUEUE_PAGE_SIZE = 25
SCRIPT_SHOWN = 80  # characters of a script a queue row shows, the ellipsis included
_URL_SLOT = 987654321  # stands for an id in a URL reversed once for every row
# What a queue row shows; the label documents stay in the database until the workbench opens.
QUEUE_COLUMNS = (
    "pk",
    "status",
    "assigned_at",
    "updated_at",
    "submitted_at",
    "item__external_id",
    "item__scenario",
    "item__text",
)


@role_required(Role.ANNOTATOR)
def annotator_queue(request: StudioRequest) -> HttpResponse:
    """The annotator's own assignments: open ones first, or the submitted ones.

    Keyset pages over the queue's own index (`webapp.keyset.keyset_slice`, its read compiled once:
    `_read_queue_page`), each row's item joined and only the columns shown loaded (no label
    documents), both tabs' counts riding on the same read: a page costs the same few queries and milliseconds with ten items or a hundred thousand
    (bench/scale.py, bench/request_profile.py measure it). Rows are formatted here, once, not by
    template filters per cell (issue 27).
    """
    show_submitted = request.GET.get("show") == "submitted"
    # The counts as uncorrelated subqueries: the database computes them once for the whole page.
    page = keyset_page_read(
        partial(_read_queue_page, request.user.pk, show_submitted=show_submitted),
        key=_queue_key(show_submitted),
        after=request.GET.get("after", ""),
        size=QUEUE_PAGE_SIZE,
    )
    if page.rows:
        open_count, submitted_count = counted_tabs(page.rows[0])
    else:  # no row to carry them: the counts alone
        viewer = User.objects.only("pk").annotate(**tab_counts(request.user)).get(pk=request.user.pk)
        open_count, submitted_count = counted_tabs(viewer)
    counts = {"open": open_count, "submitted": submitted_count}
    page = replace(page, count=counts["submitted" if show_submitted else "open"])
    return render(
        request,
        "annotation/annotator_queue.html",
        {
            "page": page,
            "rows": queue_rows(page.rows, show_submitted=show_submitted),
            "show_submitted": show_submitted,
            "counts": counts,
        },
    )


# A queue page's read in each of its shapes (which tab; first page or after a cursor): the same SQL
# on every request but for the annotator and the cursor, compiled once (`webapp.fixed_reads`, issue 46).
_QUEUE_READS: dict[tuple[bool, bool], FixedRead[Annotation]] = {}


def _queue_key(show_submitted: bool) -> str:
    return "submitted_at" if show_submitted else "assigned_at"


def _queue_page_rows(
    user_id: int, moment: datetime | None = None, after_pk: int | None = None, *, show_submitted: bool
) -> QuerySet[Annotation]:
    """The read of one queue page (`keyset_slice`): the tab's rows, only the columns shown, both
    tabs' counts riding on it."""
    mine = (
        Annotation.objects.submitted_by(user_id)  # type: ignore[arg-type]
        if show_submitted
        else Annotation.objects.open_queue_of(user_id)  # type: ignore[arg-type]
    ).only(*QUEUE_COLUMNS)
    return keyset_slice(
        mine.annotate(**tab_counts(user_id)),  # type: ignore[arg-type]
        key=_queue_key(show_submitted),
        descending=show_submitted,
        position=None if moment is None or after_pk is None else (moment, after_pk),
        size=QUEUE_PAGE_SIZE,
    )


def _read_queue_page(
    user_id: int, position: tuple[datetime, int] | None, *, show_submitted: bool
) -> list[Annotation]:
    shape = (show_submitted, position is not None)
    read = _QUEUE_READS.get(shape)
    if read is None:
        params = {"user_id": INTEGER, **({"moment": MOMENT, "after_pk": INTEGER} if position else {})}
        read = _QUEUE_READS.setdefault(
            shape, FixedRead(partial(_queue_page_rows, show_submitted=show_submitted), **params)
        )
    at = {"moment": position[0], "after_pk": position[1]} if position else {}
    return read.read(user_id=user_id, **at)


@dataclass(frozen=True)
class QueueRow:
    """One queue row as the page prints it."""

    href: str
    external_id: str
    scenario: str
    script: str
    status: str
    when: str  # the submission or last save, local time; a dash when there is none


def queue_rows(annotations: list[Annotation], *, show_submitted: bool) -> list[QueueRow]:
    """Return the queue page's rows, formatted as its template printed them with filters
    (`truncatechars:80`, `date:"Y-m-d H:i"` in the current time zone, the choices' labels)."""
    workbench_url = reverse("annotation:workbench", args=[_URL_SLOT]).replace(str(_URL_SLOT), "{}")
    scenarios, statuses = dict(Scenario.choices), dict(Annotation.Status.choices)
    rows = []
    for annotation in annotations:
        item = annotation.item
        moment = annotation.submitted_at if show_submitted else None
        if not show_submitted and annotation.status == Annotation.Status.DRAFT:
            moment = annotation.updated_at
        rows.append(
            QueueRow(
                href=workbench_url.format(annotation.pk),
                external_id=item.external_id,
                scenario=scenarios.get(item.scenario, item.scenario),
                script=item.text if len(item.text) <= SCRIPT_SHOWN else item.text[: SCRIPT_SHOWN - 1] + "…",
                status=statuses.get(annotation.status, annotation.status),
                when=timezone.localtime(moment).strftime("%Y-%m-%d %H:%M") if moment else "—",
            )
        )
    return rows


@role_required(Role.ANNOTATOR)
@never_cache
def workbench(request: StudioRequest, annotation_id: int) -> HttpResponse:
    """Label one item; the page restores whatever was last saved."""
    read = own_annotation(request.user, annotation_id, with_tab_counts=True, with_strategies=True)
    # Opening changes no tab (assigned and draft are both open): the read's counts still hold.
    annotation = workflows.open_annotation(read)
    # A first visit returns the annotation read again under its lock, without the read's extras.
    annotation.recording_gender_draft = getattr(read, "recording_gender_draft", None)  # type: ignore[attr-defined]
    context = workbench_context(annotation, progress=annotator_progress(read))
    return render(request, "annotation/labelling/workbench.html", context)


def workbench_context(
    annotation: Annotation,
    *,
    perception: dict[str, Any] | None = None,
    tom: dict[str, Any] | None = None,
    cross_turn: dict[str, Any] | None = None,
    problems: list[LabelProblem] | None = None,
    progress: QueueProgress,
) -> dict[str, Any]:
    """Return the template context of the workbench (posted values win over saved ones); a
    dialogue turn adds its history and cross-turn fields (`dialogue.context`)."""
    item = annotation.item
    perception = perception if perception is not None else annotation.perception
    tom = tom if tom is not None else annotation.tom
    strategies = strategies_read_with(annotation)
    if strategies is None:
        strategies = list(Strategy.objects.all())
    slugs = [strategy.slug for strategy in strategies]
    chosen = strategy_choices(tom, slugs)
    recording = item.recording
    draft = annotation.machine_draft
    return {
        "annotation": annotation,
        "item": item,
        "perception": perception,
        "tom": tom,
        "word_buttons": script_word_buttons(item.text, disabled=annotation.is_submitted),
        "is_emotion_shift": item.scenario == Scenario.EMOTION_SHIFT,
        "segments_editable": item.scenario == Scenario.EMOTION_SHIFT and not annotation.is_submitted,
        "choices": CHOICES,
        "conflict_kinds": [kind for kind in CONFLICT_KINDS if kind],
        "suggestions": annotation.suggestions,
        "strategy_table_rows": strategy_table_rows(
            [
                (strategy, chosen[strategy.slug])
                for strategy in strategies
                if strategy.active or chosen[strategy.slug]
            ]
        ),
        "constraints_text": "\n".join(tom.get("constraints", [])),
        "constraint_chips": CONSTRAINT_CHIPS_HTML,
        "draft": draft if draft is not None and draft.ok else None,
        "tier_draft": annotation.tier_draft,
        # Said plainly on the workbench: no draft, because no draft endpoint is configured.
        "drafts_off": not drafts_enabled(),
        # Only the annotation's own annotator opens the workbench (`own_annotation`).
        "audio_url": audio_url(recording.audio_key, annotation.annotator) if recording else "",
        **(
            page_tracks(recording, reverse("annotation:workbench_window", args=[annotation.pk]))
            if recording
            else {"contours": {}, "peaks": None, "timing": None, "window_url": ""}
        ),
        "gender_draft": gender_suggestion(
            {"gender_draft": getattr(annotation, "recording_gender_draft", None)}
        ),
        "draft_accuracy": {name: f"{share:.0%}" for name, share in DRAFT_ACCURACY.items()},
        "problems": problems or [],
        "open_problems": []
        if problems or annotation.is_submitted
        else workflows.draft_problems(annotation, strategy_slugs=slugs),
        "changed_labels": [field_label(path) for path in annotation.changed_from_draft],
        "perception_problems": problems_by_field(problems or [], "perception"),
        "tom_problems": problems_by_field(problems or [], "tom"),
        "choice_groups": choice_groups(annotation, perception, problems or []),
        "progress": progress,
        "revisions": list(annotation.revisions.order_by("-version")[:10]) if annotation.submitted_at else [],
        "stressed_json": json.dumps(perception.get("stressed_words", [])),
        "segments_json": json.dumps(perception.get("emotion_segments", [])),
        **dialogue_context(
            item,
            annotation.annotator,
            cross_turn if cross_turn is not None else annotation.cross_turn,
            strategies,
            problems or [],
        ),
    }


@role_required(Role.ANNOTATOR)
@require_GET
def workbench_window(request: StudioRequest, annotation_id: int) -> HttpResponse:
    """A long take's contours and words between ?start= and ?end= seconds (`takes.window_of`), for
    the workbench of one's own annotation (another's: 404, as the workbench)."""
    annotation = own_annotation(request.user, annotation_id)
    if annotation.item.recording is None:
        raise Http404("This item has no take.")
    try:
        return JsonResponse(window_of(annotation.item.recording, request.GET))
    except ValueError as error:
        return JsonResponse({"error": str(error)}, status=400)


def annotator_progress(annotation: Annotation) -> QueueProgress:
    """Return "12 of 40" for an open annotation: the annotator's submitted work plus their open
    queue, from the tab counts read with it (`own_annotation(..., with_tab_counts=True)`)."""
    if annotation.is_submitted:
        return QueueProgress(0, 0)
    open_count, done = counted_tabs(annotation)
    return QueueProgress(done, done + open_count)


@role_required(Role.ANNOTATOR)
@require_POST
def autosave(request: StudioRequest, annotation_id: int) -> HttpResponse:
    """Save the work in progress (htmx); 409 with a clear message when a newer save exists.

    The save's one locking read is also the ownership check (another's annotation: 404); the
    annotation is read again only to explain a refusal.
    """
    try:
        posted_version = version_from_form(request.POST)
        perception, tom = labels_from_form(request.POST)
        saved = workflows.save_draft(
            annotation_id,
            user=request.user,
            perception=perception,
            tom=tom,
            expected_version=posted_version,
            cross_turn=cross_turn_from_form(request.POST),
            page_session=page_session_from_form(request.POST),
        )
    except workflows.StaleAnnotation as stale:
        annotation = own_annotation(request.user, annotation_id)
        return _save_status(request, annotation, stale.your_version, str(stale), status=409, stale=True)
    except (workflows.LabellingError, FormError) as error:
        annotation = own_annotation(request.user, annotation_id)
        posted = request.POST.get("version", "")
        version = int(posted) if posted.isdigit() else annotation.version
        return _save_status(request, annotation, version, f"Not saved: {error}", status=400)
    return _save_status(
        request, saved, saved.version, "", open_problems=workflows.saved_draft_problems(saved)
    )


def _save_status(
    request: StudioRequest,
    annotation: Annotation,
    version: int,
    error: str,
    *,
    status: int = 200,
    stale: bool = False,
    open_problems: list[LabelProblem] | None = None,
) -> HttpResponse:
    # On a refusal the page keeps the version it had, so its next save is judged against it.
    context = {
        "annotation": annotation,
        "version": version,
        "save_error": error,
        "stale": stale,
        "open_problems": open_problems or [],
    }
    return render(request, "annotation/labelling/workbench.html#save-status", context, status=status)


@role_required(Role.ANNOTATOR)
@require_POST
def submit(request: StudioRequest, annotation_id: int) -> HttpResponse:
    """Submit, then open the next item; an incomplete form comes back with what is missing (the
    draft is kept). One path: one lock, one validation, the next item found by the same read."""
    try:
        perception, tom = labels_from_form(request.POST)
        cross_turn = cross_turn_from_form(request.POST)
        version = version_from_form(request.POST)
    except FormError as error:
        annotation = own_annotation(request.user, annotation_id)
        messages.error(request, str(error))
        return _go_to(request, reverse("annotation:workbench", args=[annotation.pk]))
    try:
        submitted = workflows.submit_annotation(
            annotation_id,
            user=request.user,
            perception=perception,
            tom=tom,
            expected_version=version,
            keep_incomplete_draft=True,
            cross_turn=cross_turn,
            page_session=page_session_from_form(request.POST),
        )
    except workflows.InvalidLabels as invalid:
        annotation = own_annotation(request.user, annotation_id, with_tab_counts=True, with_strategies=True)
        context = workbench_context(
            annotation,
            perception=perception,
            tom=tom,
            cross_turn=cross_turn,
            problems=invalid.problems,
            progress=annotator_progress(annotation),
        )
        return render(request, "annotation/labelling/workbench.html", context, status=422)
    except workflows.StaleAnnotation as stale:
        annotation = own_annotation(request.user, annotation_id, with_tab_counts=True, with_strategies=True)
        context = workbench_context(
            annotation,
            perception=perception,
            tom=tom,
            cross_turn=cross_turn,
            progress=annotator_progress(annotation),
        )
        context["stale_error"] = str(stale)
        return render(request, "annotation/labelling/workbench.html", context, status=409)
    except workflows.AnnotationClosed as closed:
        messages.error(request, str(closed))
        return _go_to(request, reverse("annotation:workbench", args=[annotation_id]))
    following = workflows.next_open_id(submitted)
    messages.success(request, f"Submitted {submitted.item.external_id}.")
    if following is None:
        return _go_to(request, reverse("annotation:annotator_queue"))
    return _go_to(request, reverse("annotation:workbench", args=[following]))


def _go_to(request: StudioRequest, url: str) -> HttpResponse:
    """Redirect; the workbench's script submits with fetch (a refusal keeps its page), and a
    redirect it followed itself would show the next page's messages to nobody: tell it where."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@role_required(Role.ANNOTATOR)
@require_POST
def reopen(request: StudioRequest, annotation_id: int) -> HttpResponse:
    """Reopen a submitted annotation for revision (until its item has a gold reference)."""
    annotation = own_annotation(request.user, annotation_id)
    try:
        workflows.reopen_annotation(
            annotation.pk, user=request.user, expected_version=version_from_form(request.POST)
        )
    except (workflows.LabellingError, FormError) as error:
        messages.error(request, str(error))
    return redirect("annotation:workbench", annotation_id=annotation.pk)
