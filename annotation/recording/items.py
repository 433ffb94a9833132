"""Workflows on items (scripts): import them from a file, and assign them to actors."""

from __future__ import annotations

import io
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from annotation.recording.assignment import ScriptToAssign, balanced_assignment, dialogue_assignment
from annotation.recording.item_import import (
    EXTERNAL_ID_PATTERN,
    ITEM_FIELDS,
    RowError,
    checked_values,
    duplicate_error,
    read_records,
)
from annotation.recording.models import Item
from webapp.jobs import start_job
from webapp.models import Job, User
from webapp.roles import Role, has_role

# An item's script may still change while nobody has recorded it into review; after that, a new
# text would silently invalidate recordings, reviews and annotations made of the old one.
EDITABLE_STATES = (Item.State.SCRIPTED, Item.State.RECORDING)
# Items that may be (re)assigned: a take in review belongs to the actor who recorded it.
ASSIGNABLE_STATES = EDITABLE_STATES
# Rows per query: well under SQLite's limit on query parameters, large enough to be quick.
BATCH = 900
# An import keeps this many problems to show (it counts them all); the page shows the first ones.
MAX_ERRORS_KEPT = 10_000
PROGRESS_EVERY_ROWS = 10_000
DIALOGUE_TURN = "dialogue"  # the staging mark of a row naming a dialogue's turn


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

    The file streams through: each row is checked (`item_import.check_row`) and loaded into a
    staging table (PostgreSQL COPY; batched inserts on SQLite), then SQL finds repeated ids and
    scripts that may no longer change, and one set-based upsert writes the items. Memory stays
    flat whatever the file's size. Rows for existing ids update those items while their script
    may still change (see EDITABLE_STATES); identical rows count as unchanged, so importing a file
    twice is harmless. `on_progress` hears the number of rows read now and then.
    """
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    file_format, records = read_records(stream, filename)
    row_label = "line" if file_format == "jsonl" else "row"
    try:
        with transaction.atomic(), staging_table() as staging:
            errors, invalid, rows_read = _load(staging, records, row_label, on_progress)
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
    except _Refused as refused:
        return refused.report
    except IntegrityError:
        # Only the unique external_id can fail here: another import created the same ids meanwhile.
        message = "Another import created some of these items at the same moment; import the file again."
        return ImportReport(file_format, 0, errors=[RowError(0, "", message)])


def _load(
    staging: Staging,
    records: Iterator[tuple[int, Mapping[str, object] | RowError]],
    row_label: str,
    on_progress: Callable[[int], None] | None,
) -> tuple[list[RowError], int, int]:
    """Check each record and stage it; return the problems (at most MAX_ERRORS_KEPT), how many rows
    have one, and how many rows were read. Ids of bad rows are staged too, for the repeat check."""
    errors: list[RowError] = []
    invalid = rows_read = 0
    with staging.loader() as load:
        for number, record in records:
            if isinstance(record, RowError):
                # A line that could not be parsed is still a row of the file: counted as read
                # (and invalid), so "N of M rows have problems" counts every line with content.
                invalid += record.row != 0
                rows_read += record.row != 0
                if len(errors) < MAX_ERRORS_KEPT or record.row == 0:
                    errors.append(record)
                continue
            rows_read += 1
            values, row_errors = checked_values(number, record, row_label)
            if values is not None:
                load(True, number, values)
            else:
                invalid += 1
                errors.extend(row_errors[: max(0, MAX_ERRORS_KEPT - len(errors))])
                external_id = record.get("external_id")
                if isinstance(external_id, str) and EXTERNAL_ID_PATTERN.fullmatch(external_id.strip()):
                    load(False, number, {"external_id": external_id.strip()})
            if on_progress is not None and rows_read % PROGRESS_EVERY_ROWS == 0:
                on_progress(rows_read)
    return errors, invalid, rows_read


STAGING = "item_import_rows"
BLANKS = ("",) * (len(ITEM_FIELDS) - 1)  # the staged values of a bad row's id, but for the id
_COMPARED = ITEM_FIELDS[1:]  # what an import may change of an existing item


@contextmanager
def staging_table() -> Iterator[Staging]:
    """Create the import's temporary staging table for the current transaction."""
    postgres = connection.vendor == "postgresql"
    columns = ", ".join(f"{name} text NOT NULL DEFAULT ''" for name in ITEM_FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {STAGING}")  # left by an import rolled back in this session
        cursor.execute(
            f"CREATE TEMP TABLE {STAGING} (valid boolean NOT NULL, number integer NOT NULL, {columns}, "
            f"repeat_of integer, locked_state text){' ON COMMIT DROP' if postgres else ''}"
        )
        yield Staging(cursor, postgres)
        if not postgres:
            cursor.execute(f"DROP TABLE {STAGING}")


class Staging:
    """One import's rows in a temporary table, and the set-based SQL (PostgreSQL and SQLite) over them.

    The checks of single rows live in `item_import.check_row`; here only what needs every row at
    once or the database: ids repeated in the file, and scripts that may no longer change.
    """

    def __init__(self, cursor: Any, postgres: bool) -> None:
        self.cursor, self.postgres, self.items = cursor, postgres, Item._meta.db_table

    @contextmanager
    def loader(self) -> Iterator[Callable[[bool, int, Mapping[str, str]], None]]:
        """Yield load(valid, row number, values): COPY on PostgreSQL, batched inserts on SQLite."""
        names = ", ".join(("valid", "number", *ITEM_FIELDS))
        if self.postgres:
            # The psycopg cursor under Django's wrapper: COPY streams rows as they are checked.
            with self.cursor.cursor.copy(f"COPY {STAGING} ({names}) FROM STDIN") as copy:
                yield lambda valid, number, values: copy.write_row(
                    (valid, number, *(values.values() if valid else (values["external_id"], *BLANKS)))
                )
            self.cursor.execute(f"ANALYZE {STAGING}")
            return
        batch: list[tuple[object, ...]] = []
        insert = f"INSERT INTO {STAGING} ({names}) VALUES ({', '.join(['%s'] * (len(ITEM_FIELDS) + 2))})"

        def load(valid: bool, number: int, values: Mapping[str, str]) -> None:
            batch.append((valid, number, *(values.get(name, "") for name in ITEM_FIELDS)))
            if len(batch) >= BATCH:
                self.cursor.executemany(insert, batch)
                batch.clear()

        yield load
        if batch:
            self.cursor.executemany(insert, batch)

    def mark_repeats_and_locked_scripts(self) -> None:
        """Mark rows repeating an earlier row's id (case-blind), and rows that would change the script
        of an item past recording; on PostgreSQL the items met are locked first, so an upload waits
        while the import rewrites a script (no take is ever of the old text with the new one stored)."""
        self.cursor.execute(
            f"UPDATE {STAGING} SET repeat_of = ranked.first FROM (SELECT number, MIN(number) OVER "
            f"(PARTITION BY LOWER(external_id)) AS first FROM {STAGING}) AS ranked "
            f"WHERE {STAGING}.number = ranked.number AND ranked.number <> ranked.first"
        )
        if self.postgres:
            self.cursor.execute(
                f"WITH locked AS (SELECT i.id FROM {self.items} i JOIN {STAGING} s ON s.external_id = "
                f"i.external_id WHERE s.valid FOR UPDATE OF i) SELECT COUNT(*) FROM locked"
            )
        differs = " OR ".join(f"i.{name} <> {STAGING}.{name}" for name in _COMPARED)
        editable = ", ".join(["%s"] * len(EDITABLE_STATES))
        self.cursor.execute(
            f"UPDATE {STAGING} SET locked_state = i.state FROM {self.items} i "
            f"WHERE i.external_id = {STAGING}.external_id AND {STAGING}.valid "
            f"AND i.state NOT IN ({editable}) AND ({differs})",
            [str(state) for state in EDITABLE_STATES],
        )
        # A dialogue's turns change only with their dialogue (annotation.dialogues.transfer).
        self.cursor.execute(
            f"UPDATE {STAGING} SET locked_state = %s FROM {self.items} i "
            f"WHERE i.external_id = {STAGING}.external_id AND {STAGING}.valid AND i.dialogue_id IS NOT NULL",
            [DIALOGUE_TURN],
        )

    def problems(self, row_label: str, *, limit: int) -> list[RowError]:
        """Return the problems of the marked rows, in row order (at most `limit`)."""
        changed = ", ".join(f"COALESCE(i.{name} <> s.{name}, false)" for name in _COMPARED)
        self.cursor.execute(
            f"SELECT s.number, s.external_id, s.repeat_of, s.locked_state, {changed} FROM {STAGING} s "
            f"LEFT JOIN {self.items} i ON i.external_id = s.external_id AND s.locked_state IS NOT NULL "
            f"WHERE s.repeat_of IS NOT NULL OR s.locked_state IS NOT NULL ORDER BY s.number LIMIT %s",
            [limit],
        )
        states = {str(value): str(label).lower() for value, label in Item.State.choices}
        found = []
        for number, external_id, repeat_of, locked_state, *differences in self.cursor.fetchall():
            if repeat_of is not None:
                found.append(duplicate_error(number, external_id, repeat_of, row_label))
            elif locked_state == DIALOGUE_TURN:
                message = f"{external_id} is a turn of a dialogue; change it by importing its dialogue again."
                found.append(RowError(number, "external_id", message, row_label))
            else:
                name = next(name for name, differs in zip(_COMPARED, differences, strict=True) if differs)
                message = f"{external_id} is already {states[locked_state]}; its script can no longer change."
                found.append(RowError(number, name, message, row_label))
        return found

    def newly_invalid(self) -> int:
        """Return how many rows valid on their own the marks have made invalid."""
        self.cursor.execute(
            f"SELECT COUNT(*) FROM {STAGING} WHERE valid AND (repeat_of IS NOT NULL OR locked_state IS NOT NULL)"
        )
        return int(self.cursor.fetchone()[0])

    def leave_out_marked(self) -> None:
        self.cursor.execute(
            f"UPDATE {STAGING} SET valid = false WHERE repeat_of IS NOT NULL OR locked_state IS NOT NULL"
        )

    def upsert(self, now: datetime) -> tuple[int, int, int]:
        """Write the valid rows set-based: new ids become items (one INSERT), changed scripts are
        updated (one UPDATE), identical rows are left alone. Return (created, updated, unchanged).

        Two plain statements rather than INSERT ... ON CONFLICT: its speculative insertion cost a
        third more per row on PostgreSQL, and a race with another import still ends in the unique
        index (IntegrityError, reported as such).
        """
        names = ", ".join(ITEM_FIELDS)
        stamp = connection.ops.adapt_datetimefield_value(now)
        changes = ", ".join(f"{name} = s.{name}" for name in _COMPARED)
        differs = " OR ".join(f"{self.items}.{name} <> s.{name}" for name in _COMPARED)
        self.cursor.execute(
            f"UPDATE {self.items} SET {changes}, updated_at = %s FROM {STAGING} s "
            f"WHERE {self.items}.external_id = s.external_id AND s.valid AND ({differs})",
            [stamp],
        )
        updated = int(self.cursor.rowcount)
        self.cursor.execute(
            f"INSERT INTO {self.items} ({names}, state, created_at, updated_at) "
            f"SELECT {names}, %s, %s, %s FROM {STAGING} s WHERE s.valid AND NOT EXISTS "
            f"(SELECT 1 FROM {self.items} i WHERE i.external_id = s.external_id) ORDER BY s.number",
            [str(Item.State.SCRIPTED), stamp, stamp],
        )
        created = int(self.cursor.rowcount)
        self.cursor.execute(f"SELECT COUNT(*) FROM {STAGING} WHERE valid")
        return created, updated, int(self.cursor.fetchone()[0]) - created - updated


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
