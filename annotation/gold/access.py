"""Who may adjudicate, and who may see and move gold: one place, used by the pages and the admin.

Role checks happen first (`role_required` with the role sets below); these helpers then narrow
to the items a person may act on.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.http import Http404

from annotation.labelling.access import may_see_others_labels
from annotation.recording.models import Item
from webapp.models import User
from webapp.roles import Role, has_role

# Who adjudicates. Adjudicating means comparing every annotator's labels of an item, so an
# adjudicator must also be someone `annotation.labelling.access.may_see_others_labels` allows;
# that rule, not this tuple, decides whose labels the adjudication page shows.
ADJUDICATORS = (Role.LEAD_ANNOTATOR,)
# Who sees the gold page and the agreement numbers, exports and imports gold, and presses the
# buttons that assign annotators and start machine drafts.
GOLD_KEEPERS = (Role.LEAD_ANNOTATOR, Role.ADMIN)


def may_adjudicate(user: User | AnonymousUser) -> bool:
    """Return True when the user may adjudicate items (and fast-track them) into gold."""
    return has_role(user, *ADJUDICATORS) and may_see_others_labels(user)


def may_keep_gold(user: User | AnonymousUser) -> bool:
    """Return True when the user may see gold and agreement, export and import gold."""
    return has_role(user, *GOLD_KEEPERS)


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
