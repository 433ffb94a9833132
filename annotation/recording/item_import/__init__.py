"""Item files (scripts in CSV or JSONL): how they are read, the rules each row follows, and how
checked rows are written.

- `rules`: the rules of one row and the names of its columns (pure);
- `reading`: a file as numbered records, read in blocks so memory stays flat (pure);
- `batches`: records checked row by row, in batches (pure);
- `writing`: batches written with COPY into the items table, or through a staging table.

`annotation.recording.items.import_items` is the workflow that puts them together. The names
other importers use (gold exports, dialogues, the builder's uploads) are here.
"""

from annotation.recording.item_import.reading import (
    MAX_LINE_BYTES,
    MAX_ROWS,
    FileProblem,
    ParsedItems,
    detect_format,
    parse_items,
    read_records,
    text_lines,
)
from annotation.recording.item_import.rules import (
    COLUMN_ALIASES,
    EXTERNAL_ID_PATTERN,
    ITEM_FIELDS,
    REQUIRED_FIELDS,
    ItemRow,
    RowError,
    check_row,
    checked_values,
    duplicate_error,
)

__all__ = [
    "COLUMN_ALIASES",
    "EXTERNAL_ID_PATTERN",
    "ITEM_FIELDS",
    "MAX_LINE_BYTES",
    "MAX_ROWS",
    "REQUIRED_FIELDS",
    "FileProblem",
    "ItemRow",
    "ParsedItems",
    "RowError",
    "check_row",
    "checked_values",
    "detect_format",
    "duplicate_error",
    "parse_items",
    "read_records",
    "text_lines",
]
