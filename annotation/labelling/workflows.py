"""Annotating an item: opening, autosaving drafts, submitting, reopening (assignment: `assignment`).

Every save names the version it was made from. Two tabs of the same annotation (or a laptop and
a desktop) race: whichever saves second, from an older version, is refused with StaleAnnotation
instead of silently overwriting the newer work. The row lock (`select_for_update`) makes the
compare-and-bump atomic on PostgreSQL; SQLite serialises writers anyway (IMMEDIATE transactions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.audio.suggestions import suggestions_from_features
from annotation.labelling.models import Annotation, AnnotationRevision, MachineDraft, Strategy
from annotation.labelling.schema import (
    TOM_SET_FIELDS,
    TOM_TEXT_FIELDS,
    LabelProblem,
    check_perception,
    check_tom,
    normalise_perception,
    normalise_tom,
    script_words,
)
from annotation.recording.models import Item, Scenario
from webapp.models import User


class LabellingError(Exception):
    """A save or submit that cannot be done; the message is written for the annotator."""


class StaleAnnotation(LabellingError):
    def __init__(self, current_version: int, your_version: int) -> None:
        self.current_version = current_version
        self.your_version = your_version
        super().__init__(
            f"Not saved: this annotation was saved from another tab or window (version {current_version}; "
            f"this page has version {your_version}). Reload the page to continue from the newest version."
        )


class AnnotationClosed(LabellingError):
    """The annotation is submitted (reopen it first) or its item already has a gold reference."""


class InvalidLabels(LabellingError):
    def __init__(self, problems: Sequence[LabelProblem]) -> None:
        self.problems = list(problems)
        # People read this message: fields by their names ("Polarity"), never by their paths.
        super().__init__("; ".join(str(problem) for problem in problems))


# --- The annotator's queue --------------------------------------------------------------------------


def next_open_annotation(user: User, after: Annotation | None = None) -> Annotation | None:
    """Return the user's next open annotation (not `after`), or None when the queue is empty."""
    queue = Annotation.objects.open_queue_of(user)
    if after is not None:
        queue = queue.exclude(pk=after.pk)
    return queue.first()


# --- Drafting and submitting ------------------------------------------------------------------------


def latest_usable_draft(item: Item) -> MachineDraft | None:
    """Return the item's newest machine draft that has usable ToM fields."""
    return item.machine_drafts.filter(error="").order_by("-created_at", "-pk").first()


def open_annotation(annotation: Annotation) -> Annotation:
    """Start an assigned annotation: pre-fill acoustic suggestions and the machine draft, once."""
    if annotation.status != Annotation.Status.ASSIGNED:
        return annotation
    with transaction.atomic():
        Item.objects.lock_of_annotation(annotation.pk)
        locked = (
            Annotation.objects.select_for_update(of=("self",))
            .select_related("item__recording")
            .get(pk=annotation.pk)
        )
        if locked.status != Annotation.Status.ASSIGNED:
            return locked
        recording = locked.item.recording
        suggestions = suggestions_from_features(recording.features) if recording else {}
        draft = latest_usable_draft(locked.item)
        locked.perception = {**normalise_perception(locked.perception), **suggestions}
        locked.tom = normalise_tom(draft.tom if draft else locked.tom)
        locked.suggestions = suggestions
        locked.machine_draft = draft
        locked.status = Annotation.Status.DRAFT
        locked.version += 1
        locked.save(
            update_fields=[
                "perception",
                "tom",
                "suggestions",
                "machine_draft",
                "status",
                "version",
                "updated_at",
            ]
        )
        return locked


def save_draft(
    annotation_id: int,
    *,
    user: User,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    expected_version: int,
) -> Annotation:
    """Autosave the annotator's work in progress; raise StaleAnnotation when a newer save exists."""
    with transaction.atomic():
        annotation = _lock_and_label(annotation_id, user, expected_version, perception, tom, complete=False)
        annotation.status = Annotation.Status.DRAFT
        annotation.version += 1
        annotation.save(update_fields=["perception", "tom", "status", "version", "updated_at"])
        return annotation


def submit_annotation(
    annotation_id: int,
    *,
    user: User,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    expected_version: int,
) -> Annotation:
    """Submit complete labels, keep a revision, and record which drafted fields the annotator changed."""
    with transaction.atomic():
        annotation = _lock_and_label(annotation_id, user, expected_version, perception, tom, complete=True)
        annotation.changed_from_draft = changed_fields(annotation, annotation.perception, annotation.tom)
        annotation.status = Annotation.Status.SUBMITTED
        annotation.version += 1
        annotation.submitted_at = timezone.now()
        annotation.save(
            update_fields=[
                "perception",
                "tom",
                "changed_from_draft",
                "status",
                "version",
                "submitted_at",
                "updated_at",
            ]
        )
        AnnotationRevision.objects.create(
            annotation=annotation,
            version=annotation.version,
            perception=annotation.perception,
            tom=annotation.tom,
        )
        return annotation


def reopen_annotation(annotation_id: int, *, user: User, expected_version: int) -> Annotation:
    """Turn a submitted annotation back into a draft (its revisions stay) while the item has no gold."""
    with transaction.atomic():
        annotation = _lock_for_change(annotation_id, user, expected_version)
        if not annotation.is_submitted:
            return annotation
        annotation.status = Annotation.Status.DRAFT
        annotation.version += 1
        annotation.save(update_fields=["status", "version", "updated_at"])
        return annotation


def _lock_for_change(annotation_id: int, user: User, expected_version: int) -> Annotation:
    # The item first, as everywhere (ItemQuerySet): a reopen or submit racing an adjudication of
    # the same item waits for the gold to be saved and is then refused, instead of changing an
    # annotation the adjudication has just read.
    Item.objects.lock_of_annotation(annotation_id)
    annotation = (
        Annotation.objects.select_for_update(of=("self",))
        .select_related("item", "machine_draft")
        .get(pk=annotation_id, annotator=user)
    )
    if annotation.version != expected_version:
        raise StaleAnnotation(annotation.version, expected_version)
    if annotation.item.state == Item.State.GOLD:
        raise AnnotationClosed("This item already has a gold reference; its annotations are closed.")
    return annotation


def _lock_and_label(
    annotation_id: int,
    user: User,
    expected_version: int,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    *,
    complete: bool,
) -> Annotation:
    """Lock an open annotation (the caller holds the transaction) and put the checked labels on it,
    unsaved; `complete` labels are a submit, others a draft save."""
    annotation = _lock_for_change(annotation_id, user, expected_version)
    if annotation.is_submitted:
        # A draft save is told how to change a submitted annotation; a second submit needs no advice.
        raise AnnotationClosed(
            "Already submitted." if complete else "Already submitted: reopen the annotation to change it."
        )
    annotation.perception, annotation.tom = checked_labels(
        annotation.item, perception, tom, complete=complete
    )
    return annotation


def checked_labels(
    item: Item, perception: Mapping[str, Any], tom: Mapping[str, Any], *, complete: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the documents normalised, or raise InvalidLabels listing every problem for this item.

    A draft (`complete=False`) keeps work in progress (`LabelProblem.incomplete`: a segment still
    without its emotion, an end typed before its start): autosave must never lose a keystroke, so
    only malformed values refuse it; submitting (`complete=True`) refuses every problem.
    """
    perception_doc, tom_doc = normalise_perception(perception), normalise_tom(tom)
    problems = label_problems(item, perception_doc, tom_doc, complete=complete)
    refused = problems if complete else [problem for problem in problems if not problem.incomplete]
    if refused:
        raise InvalidLabels(refused)
    return perception_doc, tom_doc


def label_problems(
    item: Item, perception: Mapping[str, Any], tom: Mapping[str, Any], *, complete: bool
) -> list[LabelProblem]:
    """Return every problem of normalised label documents for this item."""
    problems = check_perception(
        perception,
        emotion_shift=item.scenario == Scenario.EMOTION_SHIFT,
        words=script_words(item.text),
        complete=complete,
    )
    problems += check_tom(
        tom, strategy_slugs=set(Strategy.objects.values_list("slug", flat=True)), complete=complete
    )
    return problems


def draft_problems(annotation: Annotation) -> list[LabelProblem]:
    """Return the unfinished parts a saved draft holds (reported beside "Draft saved")."""
    return label_problems(annotation.item, annotation.perception, annotation.tom, complete=False)


def changed_fields(
    annotation: Annotation, perception: Mapping[str, Any], tom: Mapping[str, Any]
) -> list[str]:
    """Return the fields ("tom.latent_need", "perception.pitch") whose final value differs from
    what the machine draft or the acoustic analysis suggested."""
    changed = []
    for name, suggested in annotation.suggestions.items():
        if perception.get(name) != suggested:
            changed.append(f"perception.{name}")
    draft = annotation.machine_draft
    if draft is not None:
        drafted = normalise_tom(draft.tom)
        for name in TOM_TEXT_FIELDS:
            if " ".join(str(tom.get(name, "")).split()) != " ".join(str(drafted[name]).split()):
                changed.append(f"tom.{name}")
        for name in TOM_SET_FIELDS:
            if set(tom.get(name, [])) != set(drafted[name]):
                changed.append(f"tom.{name}")
    return changed
