"""Who may adjudicate, and who may see and move gold: one place, used by the pages and the admin.

Role checks happen first (`role_required` with the role sets below); these helpers then narrow
to the items a person may act on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q, QuerySet
from django.http import Http404

from annotation.gold.models import GoldReference
from annotation.labelling.access import items_still_labelled_by, may_see_others_labels
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from webapp.models import Job, User
from webapp.roles import Role, has_role

# Who adjudicates. Adjudicating means comparing every annotator's labels of an item, so an
# adjudicator must also be someone `annotation.labelling.access.may_see_others_labels` allows;
# that rule, not this tuple, decides whose labels the adjudication page shows.
ADJUDICATORS = (Role.LEAD_ANNOTATOR,)
# Who may save gold where no lead may (an item the leads labelled themselves), giving a reason
# that is kept on the gold version.
OVERRIDERS = (Role.ADMIN,)
# Who sees the gold page and the agreement numbers, exports and imports gold, and presses the
# buttons that assign annotators and start machine drafts.
GOLD_KEEPERS = (Role.LEAD_ANNOTATOR, Role.ADMIN)


def may_adjudicate(user: User | AnonymousUser) -> bool:
    """Return True when the user may adjudicate items (and fast-track them) into gold."""
    return has_role(user, *ADJUDICATORS) and may_see_others_labels(user)


def adjudication_refusal(
    user: User | AnonymousUser, item: Item, *, override_reason: str | None
) -> str | None:
    """Say why `user` may not adjudicate `item` (None: they may); the one rule for every gold save.

    A lead adjudicates items they did not label: never their own labels over their peers'. An item a
    lead labelled goes to another lead, or an admin overrides, and an override is saved only with
    its reason, which is kept on the gold version. `override_reason=None` asks only whether the user
    may open the item's adjudication page (the reason is asked for when saving).
    """
    if may_adjudicate(user) and not item.annotations.filter(annotator_id=user.pk).exists():
        return None
    if has_role(user, *OVERRIDERS):
        if override_reason is None or override_reason.strip():
            return None
        return "An admin saves gold only as an override: give the reason, it is kept with the gold version."
    if may_adjudicate(user):
        return (
            "You labelled this item, so you may not adjudicate it: another lead does, or an admin "
            "overrides with a recorded reason."
        )
    return "Only lead annotators adjudicate."


def needs_override_reason(user: User | AnonymousUser, item: Item) -> bool:
    """Return True when `user` may save gold for `item` only as an admin override, with a reason."""
    return adjudication_refusal(user, item, override_reason="") is not None and (
        adjudication_refusal(user, item, override_reason=None) is None
    )


def may_keep_gold(user: User | AnonymousUser) -> bool:
    """Return True when the user may see gold and agreement, export and import gold."""
    return has_role(user, *GOLD_KEEPERS)


STILL_LABELLING = (
    "You are still labelling this item: its gold and its annotators' labels open to you once you "
    "submit your own."
)


def gold_refusal(user: User | AnonymousUser, item: Item) -> str | None:
    """Say why `user` may not read `item`'s gold and labels (None: they may); a gold keeper never
    reads them while their own annotation of the item is open (`may_see_others_labels`; an item
    read `with_still_labelling` for the user answers that without a query)."""
    if not may_keep_gold(user):
        return "Only lead annotators and admins read gold."
    if not may_see_others_labels(user, item):
        return STILL_LABELLING
    return None


def gold_hidden_from(user: User | AnonymousUser) -> QuerySet[Annotation, Any]:
    """Return the item ids (a subquery) whose gold and labels every list and export leaves out for
    `user`: the items they are still labelling (the same rule as `gold_refusal`)."""
    return items_still_labelled_by(user)


WITHHELD_WHILE_LABELLING = "withheld while you label this item"


def gold_withheld_items(user: User | AnonymousUser) -> frozenset[int]:
    """Return the ids of the items whose gold-derived per-item text and figures every page, API and
    export withholds from `user` (one query; two for someone labelling a dialogue turn): the items they are still labelling (`gold_hidden_from`'s
    rule), whatever their role, and the later turns of a dialogue one of whose turns they are still
    labelling (a later turn's judge read the earlier turns' gold perception). What was written or
    scored against an item's gold (a judge's rationale, raw answer, error and scores: it was shown
    the gold, and can quote or paraphrase it; the gold an evaluator scores against) is shown in its
    place as `WITHHELD_WHILE_LABELLING`."""
    hidden = Item.objects.filter(pk__in=gold_hidden_from(user)).values_list("pk", "dialogue_id", "turn")
    withheld: set[int] = set()
    first_turns: dict[int, int] = {}  # dialogue: the first of its turns the user is still labelling
    for item_id, dialogue_id, turn in hidden:
        withheld.add(item_id)
        if dialogue_id is not None and turn is not None:
            first_turns[dialogue_id] = min(turn, first_turns.get(dialogue_id, turn))
    if first_turns:
        later = Q()
        for dialogue_id, turn in first_turns.items():
            later |= Q(dialogue_id=dialogue_id, turn__gt=turn)
        withheld.update(Item.objects.filter(later).values_list("pk", flat=True))
    return frozenset(withheld)


EXPORT_STILL_LABELLING = (
    "You are now labelling an item this export holds: it opens to you again once you submit your "
    "labels (an export carries the item's gold and every annotator's labels)."
)


@dataclass(frozen=True)
class HeldGold:
    """A gold version of an item its reader is still labelling: where an export may hold it."""

    scenario: str
    split: str
    created_at: datetime


def gold_still_labelled_by(user: User | AnonymousUser) -> list[HeldGold]:
    """Return every gold version of the items `user` is still labelling (one query; few rows)."""
    rows = GoldReference.objects.filter(item_id__in=items_still_labelled_by(user)).values_list(
        "item__scenario", "item__split", "created_at"
    )
    return [HeldGold(scenario, split, created_at) for scenario, split, created_at in rows]


def export_refusal(
    user: User | AnonymousUser, job: Job, still_labelled: list[HeldGold] | None = None
) -> str | None:
    """Say why `user` may not download the export archive of `job` (None: they may).

    Only its maker downloads it, for whom it was cut (another keeper may still be labelling an item
    it holds), and only while the peer-label rule lets them read every item in it: an export made
    before its maker was given an item to label holds that item's gold and labels, so it is refused
    until they submit (`gold_refusal`'s rule, over every item the archive may hold: those of its
    scenario and split that had gold when it was made). `still_labelled`: the user's
    `gold_still_labelled_by`, read once for a page that lists many exports.
    """
    if not may_keep_gold(user) or job.started_by_id is None or job.started_by_id != user.pk:
        return "No export of yours with this id: an export is downloaded by the one who made it."
    made_at = job.finished_at or job.created_at
    scenario, split = job.parameters.get("scenario") or "", job.parameters.get("split") or ""
    for gold in gold_still_labelled_by(user) if still_labelled is None else still_labelled:
        if gold.created_at <= made_at and scenario in ("", gold.scenario) and split in ("", gold.split):
            return EXPORT_STILL_LABELLING
    return None


def may_edit_gold_by_hand(user: User | AnonymousUser) -> bool:
    """Return False: gold is made by adjudication or import and kept as history, never hand-edited."""
    return False


def adjudicable_item(item_id: int) -> Item:
    """Return an item that is being annotated or already has gold, with its recording; else Http404."""
    item = (
        Item.objects.select_related("recording")
        .filter(pk=item_id, state__in=[Item.State.ANNOTATING, Item.State.GOLD])
        .first()
    )
    if item is None:
        raise Http404("No item to adjudicate with this id.")
    return item
