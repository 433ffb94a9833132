"""Check a file's records row by row and hand them on in batches, the unit an import writes.

Pure: records in (`reading.read_records`), batches out. What needs every row at once (ids
repeated in the file, scripts that may no longer change) is the writer's business, in SQL.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from annotation.recording.item_import.reading import RecordStream
from annotation.recording.item_import.rules import (
    EXTERNAL_ID_PATTERN,
    ITEM_FIELDS,
    RawRow,
    RowError,
    checked_values,
    quick_values,
)

# Rows per batch: a few hundred kilobytes of values, and a write per batch is cheap beside them.
BATCH_ROWS = 5000


@dataclass
class Batch:
    """Consecutive rows of a file, checked: the valid ones with their values, and the problems."""

    rows: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)  # (row number, values)
    # (row number, id) of each bad row whose id is usable: an id repeated by a later row is
    # reported even when its first row is bad.
    bad_ids: list[tuple[int, str]] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    rows_read: int = 0
    invalid: int = 0  # rows with a problem

    @property
    def file_refused(self) -> bool:
        """Return whether a problem of the file as a whole came (it ends the records)."""
        return any(error.row == 0 for error in self.errors)


def checked_batches(records: RecordStream, row_label: str, size: int = BATCH_ROWS) -> Iterator[Batch]:
    """Yield the records checked, in batches of `size` records (the last one shorter, maybe empty)."""
    quick = quick_values
    while True:
        batch = Batch()
        add_row, consumed = batch.rows.append, 0
        for number, record in itertools.islice(records, size):
            consumed += 1
            if record.__class__ is tuple:  # a row's raw values, else a RowError
                values = quick(record)  # type: ignore[arg-type]
                if values is not None:
                    add_row((number, values))
                else:
                    _check_slowly(batch, number, record, row_label)  # type: ignore[arg-type]
            else:
                # A line that could not be parsed is still a row of the file: counted as read
                # (and invalid), so "N of M rows have problems" counts every line with content.
                batch.errors.append(record)  # type: ignore[arg-type]
                batch.invalid += number != 0
        batch.rows_read = consumed - batch.file_refused  # a problem of the whole file is no row
        yield batch
        if consumed < size:
            return


def _check_slowly(batch: Batch, number: int, record: RawRow, row_label: str) -> None:
    """Check a row the shortcut left: add it to the batch's rows, or its problems and its id."""
    values, problems = checked_values(number, dict(zip(ITEM_FIELDS, record, strict=True)), row_label)
    if values is not None:
        batch.rows.append((number, tuple(values.values())))
        return
    batch.invalid += 1
    batch.errors.extend(problems)
    external_id = record[0]
    if isinstance(external_id, str) and EXTERNAL_ID_PATTERN.fullmatch(external_id.strip()):
        batch.bad_ids.append((number, external_id.strip()))
