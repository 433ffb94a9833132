"""Workflows on items (scripts): import them from a file, and assign them to actors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotation.recording.assignment import ScriptToAssign, balanced_assignment
from annotation.recording.item_import import ITEM_FIELDS, ItemRow, ParsedItems, RowError, parse_items
from annotation.recording.models import Item
from webapp.models import User
from webapp.roles import Role, has_role

# An item's script may still change while nobody has recorded it into review; after that, a new
# text would silently invalidate recordings, reviews and annotations made of the old one.
EDITABLE_STATES = (Item.State.SCRIPTED, Item.State.RECORDING)
# Items that may be (re)assigned: a take in review belongs to the actor who recorded it.
ASSIGNABLE_STATES = EDITABLE_STATES
# Rows per query: well under SQLite's limit on query parameters, large enough to be quick.
BATCH = 900


@dataclass(frozen=True)
class ImportReport:
    format: str
    rows_read: int
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[RowError] = field(default_factory=list)
    imported: bool = False  # False: the file was refused and nothing was written

    @property
    def invalid_rows(self) -> int:
        """Return how many rows had a problem."""
        return len({error.row for error in self.errors if error.row})


def import_items(data: bytes, filename: str, *, import_valid_rows: bool = False) -> ImportReport:
    """Create or update items from a CSV or JSONL file; with any bad row, write nothing unless asked.

    Rows for existing ids update those items while their script may still change (see
    EDITABLE_STATES); identical rows count as unchanged, so importing a file twice is harmless.
    """
    parsed = parse_items(data, filename)
    if parsed.file_errors or (parsed.errors and not import_valid_rows) or not parsed.rows:
        return ImportReport(format=parsed.format, rows_read=parsed.rows_read, errors=parsed.errors)
    try:
        with transaction.atomic():
            return _write_rows(parsed, import_valid_rows)
    except IntegrityError:
        # Only the unique external_id can fail here: another import created the same ids meanwhile.
        message = "Another import created some of these items at the same moment; import the file again."
        return ImportReport(
            format=parsed.format,
            rows_read=parsed.rows_read,
            errors=[*parsed.errors, RowError(0, "", message)],
        )


def _write_rows(parsed: ParsedItems, import_valid_rows: bool) -> ImportReport:
    existing = _existing_items([row.external_id for row in parsed.rows])
    now = timezone.now()
    errors = list(parsed.errors)
    to_create: list[Item] = []
    to_update: list[Item] = []
    unchanged = 0
    for row in parsed.rows:
        item = existing.get(row.external_id)
        if item is None:
            to_create.append(Item(**row.values()))
        elif all(getattr(item, name) == value for name, value in row.values().items()):
            unchanged += 1
        elif item.state not in EDITABLE_STATES:
            errors.append(_locked_row_error(row, item, parsed.row_label))
        else:
            for name, value in row.values().items():
                setattr(item, name, value)
            item.updated_at = now  # bulk_update does not apply auto_now
            to_update.append(item)
    if errors and not import_valid_rows:
        return ImportReport(parsed.format, parsed.rows_read, errors=errors)
    Item.objects.bulk_create(to_create, batch_size=BATCH)
    Item.objects.bulk_update(to_update, [*ITEM_FIELDS[1:], "updated_at"], batch_size=BATCH)
    return ImportReport(
        format=parsed.format,
        rows_read=parsed.rows_read,
        created=len(to_create),
        updated=len(to_update),
        unchanged=unchanged,
        errors=errors,
        imported=True,
    )


def _existing_items(external_ids: Sequence[str]) -> dict[str, Item]:
    """Return the items with these ids, locked.

    The lock makes an upload wait while the import rewrites a script, so no take is ever of the
    old text while the item already holds the new one.
    """
    found: dict[str, Item] = {}
    for start in range(0, len(external_ids), BATCH):
        chunk = external_ids[start : start + BATCH]
        rows = (
            Item.objects.select_for_update().filter(external_id__in=chunk).only("pk", "state", *ITEM_FIELDS)
        )
        for item in rows:
            found[item.external_id] = item
    return found


def _locked_row_error(row: ItemRow, item: Item, row_label: str) -> RowError:
    changed = next(name for name, value in row.values().items() if getattr(item, name) != value)
    return RowError(
        row.row,
        changed,
        f"{row.external_id} is already {item.get_state_display().lower()}; its script can no longer change.",
        row_label,
    )


@dataclass(frozen=True)
class AssignmentReport:
    assigned: list[tuple[str, int]]  # (actor, scripts given to them now), in the order chosen
    skipped: int  # items past recording, left with their actor


def assign_items(items: QuerySet[Item] | Iterable[int], actors: Sequence[User]) -> AssignmentReport:
    """Give the items to the actors in balanced shares that respect the scenario mix.

    Items already assigned move to the actors chosen now (a reassignment); items with a take in
    review or an accepted recording keep their actor and are counted as skipped.
    """
    not_actors = [str(actor) for actor in actors if not has_role(actor, Role.VOICE_ACTOR)]
    if not_actors:
        raise ValueError(f"not voice actors: {', '.join(not_actors)}")
    if not actors:
        raise ValueError("choose at least one actor")
    # A subquery, not a list of ids: a batch of tens of thousands would overflow SQLite's parameters.
    chosen = (
        Item.objects.filter(pk__in=items.values("pk"))
        if isinstance(items, QuerySet)
        else Item.objects.filter(pk__in=list(items))
    )
    with transaction.atomic():
        # Locked: an upload that arrives now re-checks the item's actor under the same lock.
        locked = list(chosen.select_for_update().order_by("pk").only("pk", "scenario", "state", "actor"))
        assignable = [item for item in locked if item.state in ASSIGNABLE_STATES]
        # What each actor holds besides this batch, so the odd scripts go to those with fewest.
        load = Counter(
            Item.objects.filter(actor__in=actors, state__in=ASSIGNABLE_STATES).values_list(
                "actor_id", flat=True
            )
        )
        load.subtract(item.actor_id for item in assignable if item.actor_id is not None)
        plan = balanced_assignment(
            [ScriptToAssign(item.pk, item.scenario) for item in assignable],
            [actor.pk for actor in actors],
            load,
        )
        now = timezone.now()
        for item in assignable:
            item.actor_id = plan[item.pk]
            item.state = Item.State.RECORDING
            item.updated_at = now
        Item.objects.bulk_update(assignable, ["actor", "state", "updated_at"], batch_size=BATCH)
    given = Counter(plan.values())
    return AssignmentReport(
        assigned=[(str(actor), given.get(actor.pk, 0)) for actor in actors],
        skipped=len(locked) - len(assignable),
    )
