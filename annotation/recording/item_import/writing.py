"""Write checked item rows to the database: straight into the items table with COPY, or through a
staging table that SQL compares with the items already there.

`annotation.recording.items.import_items` chooses: on PostgreSQL a file is first taken for what
most files are, new items and every row valid, and COPYed into the items table as it is read
(`copy_new_items`). The first sign that it is not (a bad row, an id the studio has, an id the file
repeats) gives up the attempt, whose rows the caller's savepoint rolls back, and the file is read
again into the staging table (`Staging`), as every file is on SQLite.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from django.db import connection

from annotation.recording.item_import.batches import Batch
from annotation.recording.item_import.rules import ITEM_FIELDS, RowError, duplicate_error
from annotation.recording.models import Item

# An item's script may still change while nobody has recorded it into review; after that, a new
# text would silently invalidate recordings, reviews and annotations made of the old one.
EDITABLE_STATES = (Item.State.SCRIPTED, Item.State.RECORDING)
DIALOGUE_TURN = "dialogue"  # the staging mark of a row naming a dialogue's turn
STAGING = "item_import_rows"
BLANKS = ("",) * (len(ITEM_FIELDS) - 1)  # the staged values of a bad row's id, but for the id
_COMPARED = ITEM_FIELDS[1:]  # what an import may change of an existing item
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


class NotNewItems(Exception):
    """The file is not all new, valid items: the COPY into the items table is given up."""


def copy_text(rows: Iterable[Sequence[str]], ending: str = "\n") -> str:
    """Return rows as lines of COPY's text format, each row's values followed by `ending` (more
    values, already in that format, and the line's end). The text is checked once, as a whole, for
    the characters a value must escape, which a script rarely holds."""
    rows = list(rows)
    text = "".join(["\t".join(row) + ending for row in rows])
    tabs = sum(len(row) - 1 for row in rows) + len(rows) * ending.count("\t")
    if text.count("\t") != tabs or text.count("\n") != len(rows) or "\\" in text or "\r" in text:
        return "".join([copy_fields(row) + ending for row in rows])
    return text


def copy_fields(values: Sequence[str]) -> str:
    """Return values as one line of COPY's text format, without its end (escaped only where a
    value needs it, which a script rarely does)."""
    line = "\t".join(values)
    if line.count("\t") != len(values) - 1 or "\\" in line or "\n" in line or "\r" in line:
        return "\t".join(value.translate(_COPY_ESCAPES) for value in values)
    return line


def copy_new_items(batches: Iterator[Batch], now: datetime, on_batch: Callable[[int], None]) -> int:
    """COPY the rows into the items table as they come, in file order; return how many, or raise
    NotNewItems (leaving rows written that the caller's savepoint must roll back).

    The unique index on external_id finds an id the studio or the file already has; an id the
    file repeats in other letter case is looked for once at the end, and only when the file's
    ids use both cases (otherwise two ids equal but for case would be equal).
    """
    items = Item._meta.db_table
    columns = ", ".join((*ITEM_FIELDS, "state", "created_at", "updated_at"))
    stamp = now.isoformat()
    ending = f"\t{Item.State.SCRIPTED}\t{stamp}\t{stamp}\n"
    written = rows_read = 0
    lower = upper = False
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COALESCE(MAX(id), 0), EXISTS (SELECT 1 FROM {items}) FROM {items}")
        last_id, studio_has_items = cursor.fetchone()
        first = next(batches)
        # A file of updates usually starts with one: no use copying until the index says so. Asked
        # before the COPY, which holds the connection until it ends.
        if studio_has_items and _any_known(cursor, [values[0] for _, values in first.rows]):
            raise NotNewItems
        try:
            with cursor.cursor.copy(f"COPY {items} ({columns}) FROM STDIN") as copy:
                for batch in itertools.chain([first], batches):
                    if batch.errors or batch.invalid:
                        raise NotNewItems
                    ids = "\n".join(values[0] for _, values in batch.rows)
                    lower, upper = lower or ids != ids.upper(), upper or ids != ids.lower()
                    copy.write(copy_text([values for _, values in batch.rows], ending))
                    written += len(batch.rows)
                    rows_read += batch.rows_read
                    on_batch(rows_read)
        except psycopg.errors.UniqueViolation:
            raise NotNewItems from None
        if not written:
            raise NotNewItems  # an empty file: the staging path reports it
        if lower and upper:
            cursor.execute(
                f"SELECT 1 FROM {items} WHERE id > %s GROUP BY LOWER(external_id) HAVING COUNT(*) > 1 LIMIT 1",
                [last_id],
            )
            if cursor.fetchone() is not None:
                raise NotNewItems
    return written


def _any_known(cursor: Any, external_ids: list[str]) -> bool:
    cursor.execute(
        f"SELECT EXISTS (SELECT 1 FROM {Item._meta.db_table} WHERE external_id = ANY(%s))", [external_ids]
    )
    return bool(cursor.fetchone()[0])


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

    The checks of single rows live in `item_import.rules`; here only what needs every row at
    once or the database: ids repeated in the file, and scripts that may no longer change.
    """

    def __init__(self, cursor: Any, postgres: bool) -> None:
        self.cursor, self.postgres, self.items = cursor, postgres, Item._meta.db_table

    @contextmanager
    def loader(self) -> Iterator[Callable[[Batch], None]]:
        """Yield load(batch): COPY on PostgreSQL, inserts of a batch at a time on SQLite. A bad
        row's id is staged too (marked invalid), for the repeat check."""
        names = ", ".join(("valid", "number", *ITEM_FIELDS))
        if self.postgres:
            # The psycopg cursor under Django's wrapper: COPY streams rows as they are checked.
            with self.cursor.cursor.copy(f"COPY {STAGING} ({names}) FROM STDIN") as copy:

                def copy_batch(batch: Batch) -> None:
                    copy.write(
                        copy_text(("t", str(number), *values) for number, values in batch.rows)
                        + copy_text(
                            ("f", str(number), external_id, *BLANKS) for number, external_id in batch.bad_ids
                        )
                    )

                yield copy_batch
            self.cursor.execute(f"ANALYZE {STAGING}")
            return
        insert = f"INSERT INTO {STAGING} ({names}) VALUES ({', '.join(['%s'] * (len(ITEM_FIELDS) + 2))})"

        def insert_batch(batch: Batch) -> None:
            self.cursor.executemany(
                insert,
                [(True, number, *values) for number, values in batch.rows]
                + [(False, number, external_id, *BLANKS) for number, external_id in batch.bad_ids],
            )

        yield insert_batch

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
