"""Workflows on items (scripts): import them from a file, and assign them to actors."""

from __future__ import annotations

import io
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import BinaryIO

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from annotation.recording.assignment import ScriptToAssign, balanced_assignment, dialogue_assignment
from annotation.recording.item_import import RowError, read_records
from annotation.recording.item_import.batches import Batch, checked_batches
from annotation.recording.item_import.writing import (
    EDITABLE_STATES,
    NotNewItems,
    copy_new_items,
    staging_table,
)
from annotation.recording.models import Item
from webapp.jobs import start_job
from webapp.models import Job, User
from webapp.roles import Role, has_role

# Items that may be (re)assigned: a take in review belongs to the actor who recorded it.
ASSIGNABLE_STATES = EDITABLE_STATES
# Rows per query: well under SQLite's limit on query parameters, large enough to be quick.
BATCH = 900
# An import keeps this many problems to show (it counts them all); the page shows the first ones.
MAX_ERRORS_KEPT = 10_000
PROGRESS_EVERY_ROWS = 10_000


@dataclass(frozen=True)
class ImportReport:
    format: str
    rows_read: int
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[RowError] = field(default_factory=list)
    imported: bool = False  # False: the file was refused and nothing was written
    invalid_rows: int = 0  # rows with a problem (all counted, even past MAX_ERRORS_KEPT)

    def as_result(self, shown: int = 200) -> dict[str, object]:
        """Return the report as a job result (JSON): counts and the first `shown` problems."""
        return {
            "format": self.format,
            "rows_read": self.rows_read,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "invalid_rows": self.invalid_rows,
            "imported": self.imported,
            "errors": [str(error) for error in self.errors[:shown]],
        }


class _Refused(Exception):
    """Leave the import's transaction (rolling back the staging rows) with this report."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report


def import_items(
    source: BinaryIO | bytes,
    filename: str,
    *,
    import_valid_rows: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Create or update items from a CSV or JSONL file; with any bad row, write nothing unless asked.

    The file streams through in blocks, each row checked (`item_import.rules`). On PostgreSQL a
    file of new, valid items is COPYed straight into the items table (`writing.copy_new_items`);
    any other file, and every file on SQLite, is loaded into a staging table, where SQL finds
    repeated ids and scripts that may no longer change, and one set-based upsert writes the items.
    Memory stays flat whatever the file's size. Rows for existing ids update those items while
    their script may still change (see EDITABLE_STATES); identical rows count as unchanged, so
    importing a file twice is harmless. `on_progress` hears the number of rows read now and then.
    """
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    progress = _every(PROGRESS_EVERY_ROWS, on_progress)
    # The COPY may be given up part way, and the file is then read again from here.
    start = stream.tell() if connection.vendor == "postgresql" and stream.seekable() else None
    file_format, records = read_records(stream, filename)
    row_label = "line" if file_format == "jsonl" else "row"
    try:
        with transaction.atomic():
            if start is not None:
                try:
                    with transaction.atomic():  # a savepoint: a file given up leaves no row behind
                        created = copy_new_items(
                            checked_batches(records, row_label), timezone.now(), progress
                        )
                    return ImportReport(file_format, created, created=created, imported=True)
                except NotNewItems:
                    stream.seek(start)
                    file_format, records = read_records(stream, filename)
            return _staged(
                checked_batches(records, row_label), file_format, row_label, import_valid_rows, progress
            )
    except _Refused as refused:
        return refused.report
    except IntegrityError:
        # Only the unique external_id can fail here: another import created the same ids meanwhile.
        message = "Another import created some of these items at the same moment; import the file again."
        return ImportReport(file_format, 0, errors=[RowError(0, "", message)])


def _staged(
    batches: Iterator[Batch],
    file_format: str,
    row_label: str,
    import_valid_rows: bool,
    progress: Callable[[int], None],
) -> ImportReport:
    """Import the rows through the staging table; raise _Refused with the report of a file refused."""
    with staging_table() as staging:
        errors: list[RowError] = []
        invalid = rows_read = 0
        with staging.loader() as load:
            for batch in batches:
                load(batch)
                room = max(0, MAX_ERRORS_KEPT - len(errors))
                # At most MAX_ERRORS_KEPT problems are kept, but always a problem of the whole file.
                errors.extend([*batch.errors[:room], *(e for e in batch.errors[room:] if e.row == 0)])
                invalid += batch.invalid
                rows_read += batch.rows_read
                progress(rows_read)
        base = ImportReport(file_format, rows_read, errors=errors, invalid_rows=invalid)
        if any(error.row == 0 for error in errors):
            raise _Refused(base)
        if rows_read == 0:
            raise _Refused(replace(base, errors=[RowError(0, "", "The file holds no items.")]))
        staging.mark_repeats_and_locked_scripts()
        found = staging.problems(row_label, limit=MAX_ERRORS_KEPT)
        invalid += staging.newly_invalid()
        errors = sorted([*errors, *found], key=lambda error: error.row)
        report = replace(base, errors=errors[:MAX_ERRORS_KEPT], invalid_rows=invalid)
        if (errors and not import_valid_rows) or invalid == rows_read:
            raise _Refused(report)
        staging.leave_out_marked()
        created, updated, unchanged = staging.upsert(timezone.now())
        return replace(report, created=created, updated=updated, unchanged=unchanged, imported=True)


def _every(rows: int, on_progress: Callable[[int], None] | None) -> Callable[[int], None]:
    """Return a callback that passes the rows read on to `on_progress` once per `rows` rows."""
    reported = 0

    def progress(rows_read: int) -> None:
        nonlocal reported
        if on_progress is not None and rows_read // rows > reported // rows:
            on_progress(rows_read)
        reported = rows_read

    return progress


IMPORT_JOB_KIND = "import_items"


def start_item_import(upload: File, *, started_by: User, import_valid_rows: bool) -> Job:
    """Store an uploaded item file (streamed to storage) and queue its import as a job with progress."""
    suffix = PurePosixPath((upload.name or "").lower()).suffix[:12]
    key = default_storage.save(f"imports/items/{uuid.uuid4().hex}{suffix}", upload)  # in chunks
    parameters = {"key": key, "name": upload.name or "", "import_valid_rows": import_valid_rows}
    return start_job(IMPORT_JOB_KIND, started_by=started_by, parameters=parameters)


@dataclass(frozen=True)
class AssignmentReport:
    assigned: list[tuple[str, int]]  # (actor, scripts given to them now), in the order chosen
    skipped: int  # items past recording, left with their actor


def assign_items(items: QuerySet[Item] | Iterable[int], actors: Sequence[User]) -> AssignmentReport:
    """Give the items to the actors in balanced shares that respect the scenario mix.

    Items already assigned move to the actors chosen now (a reassignment); items with a take in
    review or an accepted recording keep their actor and are counted as skipped. A dialogue moves
    whole (speaker consistency): choosing any of its turns chooses them all, they all go to one
    actor, and while any turn is past recording every turn keeps its actor.
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
    chosen_dialogues = chosen.filter(dialogue__isnull=False).values("dialogue_id")
    with_turns = Item.objects.filter(Q(pk__in=chosen.values("pk")) | Q(dialogue_id__in=chosen_dialogues))
    with transaction.atomic():
        # Locked: an upload that arrives now re-checks the item's actor under the same lock.
        locked = list(
            with_turns.select_for_update().order_by("pk").only("pk", "scenario", "state", "actor", "dialogue")
        )
        held_dialogues = {
            item.dialogue_id for item in locked if item.dialogue_id and item.state not in ASSIGNABLE_STATES
        }
        assignable = [
            item
            for item in locked
            if item.state in ASSIGNABLE_STATES and item.dialogue_id not in held_dialogues
        ]
        # What each actor holds besides this batch, so the odd scripts go to those with fewest.
        load = Counter(
            Item.objects.filter(actor__in=actors, state__in=ASSIGNABLE_STATES).values_list(
                "actor_id", flat=True
            )
        )
        load.subtract(item.actor_id for item in assignable if item.actor_id is not None)
        actor_ids = [actor.pk for actor in actors]
        turns = Counter(item.dialogue_id for item in assignable if item.dialogue_id is not None)
        dialogue_plan = dialogue_assignment(list(turns.items()), actor_ids, load) if turns else {}
        load.update(Counter(dialogue_plan[dialogue] for dialogue in turns.elements()))
        plan = balanced_assignment(
            [ScriptToAssign(item.pk, item.scenario) for item in assignable if item.dialogue_id is None],
            actor_ids,
            load,
        )
        plan.update(
            {item.pk: dialogue_plan[item.dialogue_id] for item in assignable if item.dialogue_id is not None}
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
