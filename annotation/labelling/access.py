"""Who may see or change an annotation: one place, used by the workbench, the API and the admin.

Role checks happen first (`role_required`, DRF's `HasRole`); these helpers then narrow to the
annotations a person may touch. Someone else's annotation answers 404, not 403, so that its
existence is not revealed either.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.http import Http404

from annotation.labelling.models import Annotation, AnnotationQuerySet, every_strategy, tab_counts
from annotation.recording.models import Item
from webapp.fixed_reads import INTEGER, FixedRead
from webapp.models import User
from webapp.roles import Role, has_role


def may_see_others_labels(user: User | AnonymousUser, item: Item | None = None) -> bool:
    """Return True when the user may see labels that other annotators gave (of `item`, when given).

    The rule: annotators label independently, so an annotator sees only their own annotations,
    before and after submitting (the workbench and the API load nothing else, even for a lead
    who also annotates). A lead annotator sees every submitted annotation of an item on its
    adjudication page (`annotation.gold.reports.adjudication_context` loads them through
    `annotations_visible_to`, and `annotation.gold.access.may_adjudicate` requires this rule),
    and a studio admin sees all annotations in the Django admin. Nobody else sees another
    annotator's labels anywhere. And nobody, lead or admin, sees peers' labels of an item while
    their own annotation of it is still open (not yet submitted, or reopened): they would no
    longer label it independently. `annotations_visible_to` applies the same rule to a query.
    A dialogue turn's pages show the earlier turns' audio, words and replies but no one's labels of
    any turn; of the turn before, only its gold, once adjudicated (`labelling.dialogue.history`).
    """
    if not has_role(user, Role.LEAD_ANNOTATOR, Role.ADMIN):
        return False
    if item is None:
        return True
    read_with_item = vars(item).get(_still_labelling_flag(user))
    if read_with_item is not None:
        return not read_with_item
    return not Annotation.objects.filter(item=item, annotator_id=user.pk).open().exists()


def with_still_labelling(items: QuerySet[Item], user: User | AnonymousUser) -> QuerySet[Item]:
    """Return `items`, each read with whether the user's own annotation of it is open: what
    `may_see_others_labels(user, item)` then asks of the item instead of a query of its own."""
    return items.annotate(**{_still_labelling_flag(user): _still_open_by(user.pk)})


def with_reader_still_labelling(items: QuerySet[Item], user_id: int) -> QuerySet[Item]:
    """`with_still_labelling` for a read compiled once whatever the reader (`webapp.fixed_reads`):
    the flag under one name for everyone, which `as_read_by` renames to the reader's own."""
    return items.annotate(**{_READER_FLAG: _still_open_by(user_id)})


def as_read_by(item: Item, user: User | AnonymousUser) -> Item:
    """Return `item`, read `with_reader_still_labelling` for `user`, as `with_still_labelling` reads it."""
    vars(item)[_still_labelling_flag(user)] = vars(item).pop(_READER_FLAG)
    return item


def _still_open_by(user_id: int | None) -> Exists:
    return Exists(Annotation.objects.filter(item=OuterRef("pk"), annotator_id=user_id).open())


def _still_labelling_flag(user: User | AnonymousUser) -> str:
    # Named for the user, so an item read for one person never answers for another.
    return f"still_labelled_by_{user.pk}"


_READER_FLAG = "still_labelled_by_reader"


def items_still_labelled_by(user: User | AnonymousUser) -> QuerySet[Annotation, Any]:
    """Return the item ids (a subquery) of the user's open annotations: the items whose peers'
    labels and gold `may_see_others_labels` keeps from them, on every page, API, export and admin."""
    if not user.is_authenticated:
        return Annotation.objects.none().values("item_id")
    return Annotation.objects.filter(annotator_id=user.pk).open().values("item_id")


def annotations_visible_to(user: User | AnonymousUser) -> AnnotationQuerySet:
    """Return the annotations whose labels the user may see (see `may_see_others_labels`)."""
    if not user.is_authenticated:
        return Annotation.objects.none()
    if may_see_others_labels(user):
        return Annotation.objects.filter(Q(annotator=user) | ~Q(item_id__in=items_still_labelled_by(user)))
    return Annotation.objects.filter(annotator=user)


def own_annotations(user: User | int) -> QuerySet[Annotation]:
    """Return the annotations assigned to the user (or the user's id): the only ones they may work on."""
    return Annotation.objects.filter(annotator=user)


def own_annotation(
    user: User, annotation_id: int, *, with_tab_counts: bool = False, with_strategies: bool = False
) -> Annotation:
    """Return the user's own annotation with its item, recording and draft; else raise Http404.

    Only its annotator may change an annotation (whether it may still change, stale or after
    gold, is the workflows' business). `with_tab_counts`: with the user's tab counts in the same
    read (`annotation.labelling.models.tab_counts`), for the workbench's "n of m";
    `with_strategies`: with the strategy taxonomy (`models.strategies_read_with`), for its form.
    """
    read = _OWN_READS.get((with_tab_counts, with_strategies))
    if read is None:
        read = _OWN_READS.setdefault(
            (with_tab_counts, with_strategies),
            FixedRead(
                partial(
                    _own_annotation_rows, with_tab_counts=with_tab_counts, with_strategies=with_strategies
                ),
                user_id=INTEGER,
                annotation_id=INTEGER,
            ),
        )
    found = read.read(user_id=user.pk, annotation_id=annotation_id)
    annotation = found[0] if found else None
    if annotation is None:
        raise Http404("No such annotation of yours.")
    annotation.annotator = user  # the filter made it so: spares reading the user again
    return annotation


# The workbench's and the API's read of one's own annotation, in each of its four shapes: the same
# SQL on every request but for the two ids, compiled once (`webapp.fixed_reads`, issue 46).
_OWN_READS: dict[tuple[bool, bool], FixedRead[Annotation]] = {}


def _own_annotation_rows(
    user_id: int, annotation_id: int, *, with_tab_counts: bool, with_strategies: bool
) -> QuerySet[Annotation]:
    rows = Annotation.objects.filter(annotator_id=user_id).select_related(
        "item__recording", "item__dialogue", "machine_draft", "tier_draft"
    )
    # The take's full contours and features stay in the database: the pages draw its stored
    # waveform tracks (`Take.waveform_tracks`), and decoding the contours was a tenth of a
    # workbench request (issue 27). A take analysed before the tracks were kept reads them once.
    rows = rows.defer("item__recording__contours", "item__recording__features")
    # The one feature the page shows beyond the stored suggestions, read in the same query.
    rows = rows.annotate(recording_gender_draft=KeyTextTransform("gender_draft", "item__recording__features"))
    if with_tab_counts:
        rows = rows.annotate(**tab_counts(OuterRef("annotator_id")))
    if with_strategies:
        rows = rows.annotate(strategies=every_strategy())
    rows = rows.filter(pk=annotation_id)
    return (rows if rows.ordered else rows.order_by("pk"))[:1]  # as `.first()` reads it
