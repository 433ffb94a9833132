"""Annotating an item: opening, autosaving drafts, submitting, reopening (assignment: `assignment`;
label checks and the errors: `checking`).

Every save names the version it was made from. Two tabs of the same annotation (or a laptop and
a desktop) race: whichever saves second, from an older version, is refused with StaleAnnotation
instead of silently overwriting the newer work. A save also names its tab (`page_session`): when
the newer version was made by that same tab (the page-hide send of the page a reload replaced),
the save is that tab's own next step and is written over it, never called another tab's. Saves and submits write with a conditional UPDATE
("where the version is still the one read"), which is the compare-and-bump in one statement;
reopening locks the row (`select_for_update`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.http import Http404
from django.utils import timezone

from annotation.audio.suggestions import suggestions_from_features
from annotation.labelling.checking import (
    InvalidLabels,
    LabellingError,
    changed_fields,
    checked_documents,
    draft_problems,
)
from annotation.labelling.dialogue.cross_turn import named_strategies, needs_cross_turn, normalise_cross_turn
from annotation.labelling.models import (
    TIER_FILE_DRAFT,
    Annotation,
    AnnotationRevision,
    MachineDraft,
    Strategy,
)
from annotation.labelling.schema import LabelProblem, normalise_perception, normalise_tom
from annotation.recording.models import Item
from webapp import audit
from webapp.db import compare_and_set
from webapp.fixed_reads import INTEGER, TEXT, FixedRead
from webapp.models import User


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


# --- The annotator's queue --------------------------------------------------------------------------


def next_open_id(submitted: Annotation) -> int | None:
    """Return the id of the annotation to open after `submitted` (found by `submit_annotation`'s lock)."""
    found = getattr(submitted, "next_open_id", None)
    return found if isinstance(found, int) else None


# --- Drafting and submitting ------------------------------------------------------------------------


def latest_usable_draft(item: Item) -> MachineDraft | None:
    """Return the item's newest machine draft that has usable ToM fields."""
    return (
        item.machine_drafts.filter(error="")
        .exclude(prompt_version=TIER_FILE_DRAFT)
        .order_by("-created_at", "-pk")
        .first()
    )


def latest_tier_draft(item: Item) -> MachineDraft | None:
    """Return the item's newest perception draft read from a TextGrid or EAF file."""
    return item.machine_drafts.filter(prompt_version=TIER_FILE_DRAFT).order_by("-created_at", "-pk").first()


def open_annotation(annotation: Annotation) -> Annotation:
    """Start an assigned annotation: pre-fill acoustic suggestions and the machine draft, once."""
    if annotation.status != Annotation.Status.ASSIGNED:
        return annotation
    with transaction.atomic():
        Annotation.objects.lock_item_of(annotation.pk)
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
        tier_draft = latest_tier_draft(locked.item)
        drafted = tier_draft.perception if tier_draft else {}
        # Drafts fill only what is empty: a label a person gave is never replaced by a machine's.
        person = normalise_perception(locked.perception)
        locked.perception = {
            **person,
            **{
                field: value
                for field, value in {**suggestions, **drafted}.items()
                if person.get(field) in ("", None, [])
            },
        }
        locked.tom = normalise_tom(draft.tom if draft else locked.tom)
        locked.cross_turn = normalise_cross_turn(locked.cross_turn, needed=needs_cross_turn(locked.item.turn))
        # The tier file's fields count as suggestions: what the annotator changes from them is recorded.
        locked.suggestions = {**suggestions, **drafted}
        locked.machine_draft = draft
        locked.tier_draft = tier_draft
        locked.status = Annotation.Status.DRAFT
        locked.version += 1
        locked.save(
            update_fields=[
                "perception",
                "tom",
                "cross_turn",
                "suggestions",
                "machine_draft",
                "tier_draft",
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
    cross_turn: Mapping[str, Any] | None = None,
    page_session: str = "",
) -> Annotation:
    """Autosave the annotator's work in progress; raise StaleAnnotation when a newer save exists
    from another tab (`page_session`: this tab's id; see the module's docstring).

    One read (the annotation, its item, which posted strategies exist), one validation, one
    conditional UPDATE that is the version check: no lock is held between them, since the UPDATE
    writes only over `expected_version` (compare-and-set) and a refusal is explained afterwards.
    """
    labels = _Labels.of(perception, tom, cross_turn)
    annotation = _read_for_change(annotation_id, user, expected_version, labels, page_session=page_session)
    expected_version = annotation.version  # the one read, or this tab's own newer save
    _refuse_if_submitted(annotation, complete=False)
    annotation.perception, annotation.tom, annotation.cross_turn = labels.checked(annotation, complete=False)
    _write_draft(annotation, expected_version, page_session)
    return annotation


def submit_annotation(
    annotation_id: int,
    *,
    user: User,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    expected_version: int,
    keep_incomplete_draft: bool = False,
    cross_turn: Mapping[str, Any] | None = None,
    page_session: str = "",
) -> Annotation:
    """Submit complete labels, keep a revision, and record which drafted fields the annotator changed.

    One path: one read (which also checks the strategies named and finds the annotator's next open
    annotation, `next_open_id`), one validation, and one write: on PostgreSQL a single statement
    updates the annotation over `expected_version` and inserts its revision (see `_write_submit`),
    its audit entry beside it in the same transaction.
    With `keep_incomplete_draft` (the workbench form), labels that are only incomplete are saved as
    a draft before InvalidLabels is raised, so the annotator's work is never lost. `cross_turn`:
    the cross-turn labels a later dialogue turn requires (`annotation.labelling.dialogue.cross_turn`).
    """
    labels = _Labels.of(perception, tom, cross_turn)
    annotation = _read_for_change(
        annotation_id, user, expected_version, labels, with_next=True, page_session=page_session
    )
    expected_version = annotation.version  # the one read, or this tab's own newer save
    _refuse_if_submitted(annotation, complete=True)
    try:
        annotation.perception, annotation.tom, annotation.cross_turn = labels.checked(
            annotation, complete=True
        )
    except InvalidLabels:
        if keep_incomplete_draft:
            # A draft save refuses what no draft may hold (then that is what the annotator is told).
            annotation.perception, annotation.tom, annotation.cross_turn = labels.checked(
                annotation, complete=False
            )
            _write_draft(annotation, expected_version, page_session)
        raise
    annotation.changed_from_draft = changed_fields(annotation, annotation.perception, annotation.tom)
    _write_submit(annotation, expected_version, user)
    return annotation


def saved_draft_problems(saved: Annotation) -> list[LabelProblem]:
    """Return the unfinished parts of a draft `save_draft` has just written, reading nothing: that
    save refused every strategy it did not find, so each strategy the draft names exists."""
    return draft_problems(
        saved, strategy_slugs=_Labels(saved.perception, saved.tom, saved.cross_turn).strategies
    )


def reopen_annotation(annotation_id: int, *, user: User, expected_version: int) -> Annotation:
    """Turn a submitted annotation back into a draft (its revisions stay) while the item has no gold."""
    with transaction.atomic():
        annotation = _lock_for_change(annotation_id, user, expected_version)
        if not annotation.is_submitted:
            return annotation
        before = audit.fields_of(annotation, "status", "version")
        annotation.status = Annotation.Status.DRAFT
        annotation.version += 1
        annotation.save(update_fields=["status", "version", "updated_at"])
        audit.record(
            actor=user,
            action=audit.ANNOTATION_REOPEN,
            obj=annotation,
            before=before,
            after=audit.fields_of(annotation, "status", "version"),
        )
        return annotation


class _Labels:
    """Posted label documents, normalised before the read so that read can check their strategies."""

    def __init__(
        self, perception: dict[str, Any], tom: dict[str, Any], cross_turn: Mapping[str, Any] | None
    ) -> None:
        self.perception, self.tom, self.cross_turn = perception, tom, cross_turn
        named = [
            *tom.get("recommended_strategies", []),
            *tom.get("not_recommended_strategies", []),
            *named_strategies(cross_turn),
        ]
        self.strategies = sorted({str(slug) for slug in named})

    @classmethod
    def of(
        cls, perception: Mapping[str, Any], tom: Mapping[str, Any], cross_turn: Mapping[str, Any] | None
    ) -> _Labels:
        return cls(normalise_perception(perception), normalise_tom(tom), cross_turn)

    def checked(
        self, annotation: Annotation, *, complete: bool
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        known = {slug for index, slug in enumerate(self.strategies) if getattr(annotation, f"_known_{index}")}
        return checked_documents(
            annotation.item,
            self.perception,
            self.tom,
            self.cross_turn,
            complete=complete,
            strategy_slugs=known,
        )


def _read_for_change(
    annotation_id: int,
    user: User,
    expected_version: int,
    labels: _Labels,
    *,
    with_next: bool = False,
    page_session: str = "",
) -> Annotation:
    """Read the user's annotation with its item and draft, which of the posted strategies exist and,
    `with_next`, the user's next open annotation: one query. Someone else's answers 404. A newer
    version made by the same tab (`page_session`) is no conflict: the caller writes over it."""
    slugs = {f"slug_{index}": slug for index, slug in enumerate(labels.strategies)}
    if len(slugs) <= _SHAPES_KEPT:
        shape = (len(slugs), with_next)
        read = _CHANGE_READS.get(shape) or _CHANGE_READS.setdefault(
            shape,
            FixedRead(
                partial(_rows_for_change, with_next=with_next),
                annotation_id=INTEGER,
                user_id=INTEGER,
                **dict.fromkeys(slugs, TEXT),
            ),
        )
        found = read.read(annotation_id=annotation_id, user_id=user.pk, **slugs)
    else:
        found = list(_rows_for_change(annotation_id, user.pk, with_next=with_next, **slugs))
    annotation = found[0] if found else None
    if annotation is None:
        raise Http404("No such annotation of yours.")
    own_echo = bool(page_session) and annotation.saved_from == page_session
    _refuse_if_changed(annotation, annotation.version if own_echo else expected_version)
    return annotation


# The read for a change, in each of its shapes (how many strategies were posted, with the next
# open annotation or not): the same SQL on every save but for the values, compiled once (issue 46).
# Up to _SHAPES_KEPT strategies: more (no form posts them) are read by the ORM, so no one can grow the cache.
_SHAPES_KEPT = 16
_CHANGE_READS: dict[tuple[int, bool], FixedRead[Annotation]] = {}


def _rows_for_change(
    annotation_id: int, user_id: int, *, with_next: bool, **slugs: str
) -> QuerySet[Annotation]:
    rows = Annotation.objects.select_related("item", "machine_draft")
    for index in range(len(slugs)):
        rows = rows.annotate(
            **{f"_known_{index}": Exists(Strategy.objects.filter(slug=slugs[f"slug_{index}"]))}
        )
    if with_next:
        following = Annotation.objects.open_queue_of(user_id).exclude(pk=OuterRef("pk")).values("pk")[:1]  # type: ignore[arg-type]
        rows = rows.annotate(next_open_id=Subquery(following))
    rows = rows.filter(pk=annotation_id, annotator_id=user_id)
    return (rows if rows.ordered else rows.order_by("pk"))[:1]  # as `.first()` reads it


def _refuse_if_changed(annotation: Annotation, expected_version: int) -> None:
    if annotation.version != expected_version:
        raise StaleAnnotation(annotation.version, expected_version)
    if annotation.item.state == Item.State.GOLD:
        raise AnnotationClosed("This item already has a gold reference; its annotations are closed.")


def _still_open(annotation: Annotation, expected_version: int) -> QuerySet[Annotation]:
    """The annotation, only while it is as read: same version, not submitted, item without gold.

    Every condition sits on the annotation's own row (the gold check is an EXISTS over it, not a
    join), so `compare_and_set` re-checks the version on the row a concurrent save just wrote."""
    item_has_gold = Exists(Item.objects.filter(pk=OuterRef("item_id"), state=Item.State.GOLD))
    return (
        Annotation.objects.filter(pk=annotation.pk, version=expected_version)
        .exclude(status=Annotation.Status.SUBMITTED)
        .exclude(item_has_gold)
    )


def _write_draft(annotation: Annotation, expected_version: int, page_session: str = "") -> None:
    now = timezone.now()
    if connection.vendor == "postgresql":
        written = _draft_in_one_statement(annotation, expected_version, page_session, now)
    else:
        written = bool(
            compare_and_set(
                _still_open(annotation, expected_version),
                saved_from=page_session,
                perception=annotation.perception,
                tom=annotation.tom,
                cross_turn=annotation.cross_turn,
                status=Annotation.Status.DRAFT,
                version=expected_version + 1,
                updated_at=now,
            )
        )
    if not written:
        _explain_lost_race(annotation, expected_version)
    annotation.status, annotation.version, annotation.updated_at = (
        Annotation.Status.DRAFT,
        expected_version + 1,
        now,
    )
    annotation.saved_from = page_session


def _draft_in_one_statement(
    annotation: Annotation, expected_version: int, page_session: str, now: datetime.datetime
) -> bool:
    """PostgreSQL: autosave's conditional UPDATE written out, the same conditions as `_still_open`
    on the annotation's own row, so it is not built and compiled by the ORM on every autosave
    (about 0.8 ms of its CPU, docs/benchmarks.md). Return False when the annotation changed."""
    table, items = Annotation._meta.db_table, Item._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET saved_from = %s, perception = %s::jsonb, tom = %s::jsonb, "
            "cross_turn = %s::jsonb, status = %s, version = %s, updated_at = %s "
            f"WHERE id = %s AND version = %s AND status <> %s AND NOT EXISTS (SELECT 1 FROM {items} i "
            f"WHERE i.id = {table}.item_id AND i.state = %s)",
            [
                page_session,
                json.dumps(annotation.perception),
                json.dumps(annotation.tom),
                json.dumps(annotation.cross_turn),
                str(Annotation.Status.DRAFT),
                expected_version + 1,
                now,
                annotation.pk,
                expected_version,
                str(Annotation.Status.SUBMITTED),
                str(Item.State.GOLD),
            ],
        )
        return cursor.rowcount == 1


def _write_submit(annotation: Annotation, expected_version: int, user: User) -> None:
    """Mark the annotation submitted over `expected_version` and keep its revision and its audit
    entry, atomically."""
    now = timezone.now()
    values = {
        "perception": annotation.perception,
        "tom": annotation.tom,
        "cross_turn": annotation.cross_turn,
        "changed_from_draft": annotation.changed_from_draft,
        "status": Annotation.Status.SUBMITTED,
        "version": expected_version + 1,
        "submitted_at": now,
        "updated_at": now,
    }
    before = audit.fields_of(annotation, "status", "version")
    with transaction.atomic():
        if connection.vendor == "postgresql":
            written = _submit_in_one_statement(annotation, expected_version, values)
        else:
            written = bool(compare_and_set(_still_open(annotation, expected_version), **values))
            if written:
                AnnotationRevision.objects.create(
                    annotation=annotation,
                    version=expected_version + 1,
                    perception=annotation.perception,
                    tom=annotation.tom,
                    cross_turn=annotation.cross_turn,
                )
        if written:
            audit.record(
                actor=user,
                action=audit.ANNOTATION_SUBMIT,
                obj=annotation,
                before={**before, "version": expected_version},
                after={key: values[key] for key in ("status", "version", "perception", "tom", "cross_turn")},
            )
    if not written:
        _explain_lost_race(annotation, expected_version)
    for name, value in values.items():
        setattr(annotation, name, value)


def _submit_in_one_statement(annotation: Annotation, expected_version: int, values: dict[str, Any]) -> bool:
    """PostgreSQL: the conditional UPDATE and the revision INSERT as one statement (a data-modifying
    CTE), so they cannot part; the caller's transaction adds the audit entry. Return False when the
    annotation changed."""
    table, revisions, items = (
        Annotation._meta.db_table,
        AnnotationRevision._meta.db_table,
        Item._meta.db_table,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH changed AS (UPDATE {table} SET perception = %s::jsonb, tom = %s::jsonb, "
            "cross_turn = %s::jsonb, "
            "changed_from_draft = %s::jsonb, status = %s, version = %s, submitted_at = %s, updated_at = %s "
            f"WHERE id = %s AND version = %s AND status <> %s AND NOT EXISTS (SELECT 1 FROM {items} i "
            f"WHERE i.id = {table}.item_id AND i.state = %s) RETURNING id, version, perception, tom, cross_turn) "
            f"INSERT INTO {revisions} (annotation_id, version, perception, tom, cross_turn, saved_at) "
            "SELECT id, version, perception, tom, cross_turn, %s FROM changed RETURNING annotation_id",
            [
                json.dumps(values["perception"]),
                json.dumps(values["tom"]),
                json.dumps(values["cross_turn"]),
                json.dumps(values["changed_from_draft"]),
                str(values["status"]),
                values["version"],
                values["submitted_at"],
                values["updated_at"],
                annotation.pk,
                expected_version,
                str(Annotation.Status.SUBMITTED),
                str(Item.State.GOLD),
                values["updated_at"],
            ],
        )
        return cursor.fetchone() is not None


def _explain_lost_race(annotation: Annotation, expected_version: int) -> None:
    """Raise why a conditional write found the annotation changed since it was read."""
    current = Annotation.objects.select_related("item").get(pk=annotation.pk)
    _refuse_if_changed(current, expected_version)
    _refuse_if_submitted(current, complete=True)
    raise StaleAnnotation(current.version, expected_version)


def _lock_for_change(annotation_id: int, user: User, expected_version: int) -> Annotation:
    """Lock the user's annotation for a change (the caller holds the transaction)."""
    # The item first, as everywhere (ItemQuerySet): a reopen racing an adjudication of the same
    # item waits for the gold to be saved and is then refused, instead of changing an annotation
    # the adjudication has just read.
    Annotation.objects.lock_item_of(annotation_id)
    annotation = (
        Annotation.objects.select_for_update(of=("self",))
        .select_related("item")
        .filter(pk=annotation_id, annotator=user)
        .first()
    )
    if annotation is None:
        raise Http404("No such annotation of yours.")
    _refuse_if_changed(annotation, expected_version)
    return annotation


def _refuse_if_submitted(annotation: Annotation, *, complete: bool) -> None:
    if annotation.is_submitted:
        # A draft save is told how to change a submitted annotation; a second submit needs no advice.
        raise AnnotationClosed(
            "Already submitted." if complete else "Already submitted: reopen the annotation to change it."
        )
