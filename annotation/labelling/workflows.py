"""Annotating an item: opening, autosaving drafts, submitting, reopening (assignment: `assignment`).

Every save names the version it was made from. Two tabs of the same annotation (or a laptop and
a desktop) race: whichever saves second, from an older version, is refused with StaleAnnotation
instead of silently overwriting the newer work. The row lock (`select_for_update`) makes the
compare-and-bump atomic on PostgreSQL; SQLite serialises writers anyway (IMMEDIATE transactions).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Subquery
from django.http import Http404
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
        super().__init__("; ".join(f"{problem.field}: {problem.message}" for problem in problems))


# --- The annotator's queue --------------------------------------------------------------------------


def next_open_id(submitted: Annotation) -> int | None:
    """Return the id of the annotation to open after `submitted` (found by `submit_annotation`'s lock)."""
    found = getattr(submitted, "next_open_id", None)
    return found if isinstance(found, int) else None


# --- Drafting and submitting ------------------------------------------------------------------------


def latest_usable_draft(item: Item) -> MachineDraft | None:
    """Return the item's newest machine draft that has usable ToM fields."""
    return item.machine_drafts.filter(error="").order_by("-created_at", "-pk").first()


def open_annotation(annotation: Annotation) -> Annotation:
    """Start an assigned annotation: pre-fill acoustic suggestions and the machine draft, once."""
    if annotation.status != Annotation.Status.ASSIGNED:
        return annotation
    with transaction.atomic():
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
    labels = _Labels.of(perception, tom)
    with transaction.atomic():
        annotation = _lock_for_change(annotation_id, user, expected_version, labels)
        _refuse_if_submitted(annotation, complete=False)
        annotation.perception, annotation.tom = labels.checked(annotation, complete=False)
        _save_as_draft(annotation)
        return annotation


def submit_annotation(
    annotation_id: int,
    *,
    user: User,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    expected_version: int,
    keep_incomplete_draft: bool = False,
) -> Annotation:
    """Submit complete labels, keep a revision, and record which drafted fields the annotator changed.

    One lock, one validation: the locking read also checks the strategies named and finds the
    annotator's next open annotation (`next_open_id` on the result), so a submit from the
    workbench costs the lock, the update and the revision. With `keep_incomplete_draft` (the
    workbench form), labels that are only incomplete are saved as a draft before InvalidLabels is
    raised, so the annotator's work is never lost.
    """
    labels = _Labels.of(perception, tom)
    unfinished: InvalidLabels | None = None
    with transaction.atomic():
        annotation = _lock_for_change(annotation_id, user, expected_version, labels, with_next=True)
        _refuse_if_submitted(annotation, complete=True)
        try:
            annotation.perception, annotation.tom = labels.checked(annotation, complete=True)
        except InvalidLabels as invalid:
            if not keep_incomplete_draft:
                raise
            # Raised after the transaction commits the draft; a draft save refuses what no draft may hold.
            annotation.perception, annotation.tom = labels.checked(annotation, complete=False)
            _save_as_draft(annotation)
            unfinished = invalid
        else:
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
    if unfinished is not None:
        raise unfinished
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


class _Labels:
    """Posted label documents, normalised before the lock so the locking read can check their strategies."""

    def __init__(self, perception: dict[str, Any], tom: dict[str, Any]) -> None:
        self.perception, self.tom = perception, tom
        named = [*tom.get("recommended_strategies", []), *tom.get("not_recommended_strategies", [])]
        self.strategies = sorted({str(slug) for slug in named})

    @classmethod
    def of(cls, perception: Mapping[str, Any], tom: Mapping[str, Any]) -> _Labels:
        return cls(normalise_perception(perception), normalise_tom(tom))

    def checked(self, annotation: Annotation, *, complete: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        known = {slug for index, slug in enumerate(self.strategies) if getattr(annotation, f"_known_{index}")}
        return checked_labels(
            annotation.item, self.perception, self.tom, complete=complete, strategy_slugs=known
        )


def _lock_for_change(
    annotation_id: int,
    user: User,
    expected_version: int,
    labels: _Labels | None = None,
    *,
    with_next: bool = False,
) -> Annotation:
    """Lock the user's annotation (the caller holds the transaction) in one read that also answers
    which of the posted strategies exist and, `with_next`, the user's next open annotation."""
    rows = Annotation.objects.select_for_update(of=("self",)).select_related("item", "machine_draft")
    for index, slug in enumerate(labels.strategies if labels else []):
        rows = rows.annotate(**{f"_known_{index}": Exists(Strategy.objects.filter(slug=slug))})
    if with_next:
        following = Annotation.objects.open_queue_of(user).exclude(pk=OuterRef("pk")).values("pk")[:1]
        rows = rows.annotate(next_open_id=Subquery(following))
    annotation = rows.filter(pk=annotation_id, annotator=user).first()
    if annotation is None:
        raise Http404("No such annotation of yours.")
    if annotation.version != expected_version:
        raise StaleAnnotation(annotation.version, expected_version)
    if annotation.item.state == Item.State.GOLD:
        raise AnnotationClosed("This item already has a gold reference; its annotations are closed.")
    return annotation


def _refuse_if_submitted(annotation: Annotation, *, complete: bool) -> None:
    if annotation.is_submitted:
        # A draft save is told how to change a submitted annotation; a second submit needs no advice.
        raise AnnotationClosed(
            "Already submitted." if complete else "Already submitted: reopen the annotation to change it."
        )


def _save_as_draft(annotation: Annotation) -> None:
    annotation.status = Annotation.Status.DRAFT
    annotation.version += 1
    annotation.save(update_fields=["perception", "tom", "status", "version", "updated_at"])


def checked_labels(
    item: Item,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    *,
    complete: bool,
    strategy_slugs: Collection[str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the documents normalised, or raise InvalidLabels listing every problem for this item.

    `strategy_slugs`: the taxonomy's slugs (or those of the named strategies that exist), when the
    caller has them already; else they are read here.
    """
    perception_doc, tom_doc = normalise_perception(perception), normalise_tom(tom)
    problems = check_perception(
        perception_doc,
        emotion_shift=item.scenario == Scenario.EMOTION_SHIFT,
        words=script_words(item.text),
        complete=complete,
    )
    if strategy_slugs is None:
        strategy_slugs = set(Strategy.objects.values_list("slug", flat=True))
    problems += check_tom(tom_doc, strategy_slugs=strategy_slugs, complete=complete)
    if problems:
        raise InvalidLabels(problems)
    return perception_doc, tom_doc


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
