"""What the lead's pages show, computed in a fixed number of queries whatever the data size.

`adjudication_context` is the side-by-side adjudication page; `adjudication_queue` the queue's
tabs (ready for gold, still annotating, gold); `gold_transfers` the gold page's latest exports
and imports.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import Page, Paginator
from django.urls import reverse

from annotation.gold import adjudication
from annotation.gold.access import (
    EXPORT_STILL_LABELLING,
    OVERRIDERS,
    HeldGold,
    export_refusal,
    gold_still_labelled_by,
    needs_override_reason,
)
from annotation.gold.models import GoldReference
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.labelling import drafts
from annotation.labelling.access import annotations_visible_to
from annotation.labelling.comparison import FieldComparison
from annotation.labelling.dialogue.context import dialogue_context
from annotation.labelling.dialogue.cross_turn import CROSS_TURN_CHOICES
from annotation.labelling.forms import strategy_choices
from annotation.labelling.models import (
    Annotation,
    Strategy,
    is_ready_for_gold,
    items_ready_for_gold,
    items_still_annotating,
)
from annotation.labelling.schema import CHOICES, LabelProblem, script_words
from annotation.recording.models import Item
from annotation.recording.takes import page_tracks
from webapp.models import Job, User
from webapp.roles import has_role
from webapp.storage import audio_url

RECENT_TRANSFERS = 10
QUEUE_PAGE_SIZE = 25
ADJUDICATION_TABS = ("ready", "in_progress", "gold")
GOLD_HISTORY_SHOWN = 10


def adjudication_queue(tab: str, page_number: str | None, viewer: User | None = None) -> dict[str, Any]:
    """Return the queue's context: one page of items ready for gold (fast-track where the
    annotators agree), still being annotated, or gold; unknown tabs show "ready". A lead `viewer`
    is not offered the items they labelled (`gold.access.adjudication_refusal`)."""
    tab = tab if tab in ADJUDICATION_TABS else "ready"
    if tab == "ready":
        items = adjudication.with_submitted_annotations(items_ready_for_gold())
    elif tab == "in_progress":
        items = items_still_annotating()
    else:
        items = Item.objects.filter(state=Item.State.GOLD).order_by("-updated_at", "pk")
    if viewer is not None and not has_role(viewer, *OVERRIDERS):
        items = items.exclude(annotations__annotator=viewer)
    page: Page[Item] = Paginator(items, QUEUE_PAGE_SIZE).get_page(page_number)
    rows = [
        (item, tab == "ready" and adjudication.fast_trackable(getattr(item, "submitted", [])))
        for item in page.object_list
    ]
    counts = {
        "ready": items_ready_for_gold().count(),
        "in_progress": items_still_annotating().count(),
        "gold": Item.objects.filter(state=Item.State.GOLD).count(),
    }
    return {
        "tab": tab,
        "page": page,
        "rows": rows,
        "counts": counts,
        "waiting_for_annotators": Item.objects.filter(state=Item.State.RECORDED).count(),
        "drafts_enabled": drafts.drafts_enabled(),
        "latest_draft_job": Job.objects.filter(kind=drafts.JOB_KIND).order_by("-created_at").first(),
    }


def adjudication_context(
    item: Item,
    viewer: User,
    *,
    perception: dict[str, Any] | None = None,
    tom: dict[str, Any] | None = None,
    problems: list[LabelProblem] | None = None,
    cross_turn: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the adjudication page's context: comparison rows and the gold form's values.

    The annotations compared are the submitted ones `viewer` may see (`labelling.access`); a
    dialogue turn adds the dialogue so far and its cross-turn rows (`labelling.dialogue.context`).
    """
    annotations = list(annotations_visible_to(viewer).submitted().filter(item=item))
    current = GoldReference.objects.current_of(item)
    comparison = adjudication.compare_item(item, annotations) if annotations else None
    if perception is None or tom is None:
        if current is not None:
            perception, tom, cross_turn = current.perception, current.tom, current.cross_turn
        elif comparison is not None:
            proposal = comparison.proposal
            perception, tom, cross_turn = (
                dict(proposal.perception),
                dict(proposal.tom),
                dict(proposal.cross_turn),
            )
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
        "rows": [_row(field, names, perception, tom, cross_turn or {}) for field in comparison.fields]
        if comparison
        else [],
        "current_gold": current,
        "gold_history": list(GoldReference.objects.history_of(item)[:GOLD_HISTORY_SHOWN]),
        "gold_version": current.version if current else 0,
        "perception": perception,
        "tom": tom,
        "words": list(enumerate(script_words(item.text))),
        "stressed_json": json.dumps(perception.get("stressed_words", [])),
        "segment_options": _segment_options(annotations, perception),
        "strategy_rows": [(strategy, chosen[strategy.slug]) for strategy in strategies],
        "constraints_text": "\n".join(tom.get("constraints", [])),
        "audio_url": audio_url(recording.audio_key, viewer) if recording else "",
        "needs_override_reason": needs_override_reason(viewer, item),
        # The workbench's waveform: precomputed peaks, a long take's contours and words per window.
        **(
            page_tracks(recording, reverse("annotation:adjudicate_window", args=[item.pk]))
            if recording
            else {"contours": {}, "peaks": None, "timing": None, "window_url": ""}
        ),
        "problems": problems or [],
        "ready": is_ready_for_gold(list(item.annotations.all())),
        **dialogue_context(item, viewer, cross_turn, strategies, problems or []),
    }


def _row(
    comparison: FieldComparison,
    strategy_names: dict[str, str],
    perception: dict[str, Any],
    tom: dict[str, Any],
    cross_turn: dict[str, Any],
) -> dict[str, Any]:
    spec = comparison.spec
    gold = {"perception": perception, "tom": tom, "cross_turn": cross_turn}[spec.section].get(spec.name)
    return {
        "spec": spec,
        "agreed": comparison.agreed,
        "values": [_display(spec.kind, spec.name, value, strategy_names) for value in comparison.values],
        "raw_values": list(comparison.values),
        "gold": gold,
        "options": [option for option in {**CHOICES, **CROSS_TURN_CHOICES}.get(spec.name, ()) if option],
        "prefix": {"perception": "p", "tom": "t", "cross_turn": "x"}[spec.section],
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
        labels = [strategy_names.get(entry, entry) for entry in value] if "strateg" in name else value
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


def gold_transfers(viewer: User) -> dict[str, Any]:
    """Return the gold page's context: the latest export and import jobs (each with its archive
    key, or None; None too for another keeper's export, which `viewer` may not download), whether
    any is still running, and how many items have a current gold.

    Two queries, however many jobs and gold references there are (an export's archive is looked
    up in storage, not in the database), and a third when the viewer has an archive of their own
    to be offered (`gold.access.export_refusal`: none while they label an item it holds).
    """
    jobs = list(
        Job.objects.filter(kind__in=[transfer_jobs.EXPORT_KIND, transfer_jobs.IMPORT_KIND])
        # Exports made by the API or a command are recorded for lineage only: no archive to offer.
        .exclude(parameters__has_key="via")
        .select_related("started_by")
        .order_by("-created_at")[:RECENT_TRANSFERS]
    )
    still_labelled: list[HeldGold] | None = None  # read once, and only when an archive is offered
    offered: list[tuple[Job, str | None]] = []
    withheld: set[int] = set()  # the viewer's own archives, refused while they label an item in one
    for job in jobs:
        archive = transfer_jobs.archive_of(job)
        if archive is not None and job.started_by_id == viewer.pk and still_labelled is None:
            still_labelled = gold_still_labelled_by(viewer)
        refusal = export_refusal(viewer, job, still_labelled or []) if archive is not None else None
        if refusal is not None:
            archive = None
            if job.started_by_id == viewer.pk:
                withheld.add(job.pk)
        offered.append((job, archive))
    return {
        "jobs": offered,
        "withheld": withheld,
        "withheld_because": EXPORT_STILL_LABELLING,
        "running": any(not job.is_finished for job in jobs),
        "gold_count": GoldReference.objects.current().count(),
    }
