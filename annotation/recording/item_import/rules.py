"""The rules an item row (a script) must follow, and the names its columns go by.

Pure: plain values in, normalised values or problems out. `checked_values` is the one home of a
row's rules, for every way items are imported (item files, gold exports, dialogue turns);
`quick_values` is its shortcut for the rows that obviously pass, which are nearly all of them.

Columns (CSV header or JSON keys): external_id, text, scenario, target_emotion, and optionally
emotion_variant, target_intensity (default medium), instructions, split (default test). A few
aliases people use in spreadsheets are accepted (id, script, emotion, variant, intensity).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from webapp.lib.vocabulary import DEFAULT_INTENSITY, DEFAULT_SPLIT, EMOTIONS, INTENSITIES, SCENARIOS, SPLITS

ITEM_FIELDS = (
    "external_id",
    "text",
    "scenario",
    "target_emotion",
    "emotion_variant",
    "target_intensity",
    "instructions",
    "split",
)
REQUIRED_FIELDS = ("external_id", "text", "scenario", "target_emotion")
COLUMN_ALIASES = {
    "id": "external_id",
    "item_id": "external_id",
    "script": "text",
    "emotion": "target_emotion",
    "variant": "emotion_variant",
    "intensity": "target_intensity",
}
# Spellings found in the paper and in emotion datasets, mapped to our values.
VALUE_ALIASES = {
    "scenario": {"emotional-shift": "emotion-shift", "modality-conflicts": "modality-conflict"},
    "target_emotion": {
        "happiness": "happy",
        "joy": "happy",
        "sadness": "sad",
        "anger": "angry",
        "surprised": "surprise",
        "disgusted": "disgust",
        "fearful": "fear",
    },
}

EXTERNAL_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_TEXT_CHARS = 2000
MAX_VARIANT_CHARS = 64
MAX_INSTRUCTIONS_CHARS = 4000

# A row's raw values in ITEM_FIELDS order, as a file gives them (None or "": not given).
RawRow = tuple[object, ...]


@dataclass(frozen=True)
class ItemRow:
    """One valid row, with values normalised to what the Item model stores."""

    row: int
    external_id: str
    text: str
    scenario: str
    target_emotion: str
    emotion_variant: str
    target_intensity: str
    instructions: str
    split: str

    def values(self) -> dict[str, str]:
        """Return the item fields of the row (everything but the row number)."""
        return {name: getattr(self, name) for name in ITEM_FIELDS}


@dataclass(frozen=True)
class RowError:
    """A problem with one row (row 0: the file as a whole) and, when it is one, one field."""

    row: int
    field: str
    message: str
    row_label: str = "row"

    def __str__(self) -> str:
        if self.row == 0:
            return self.message
        where = f"{self.row_label.capitalize()} {self.row}"
        return f"{where}, {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


def duplicate_error(number: int, external_id: str, earlier: int, row_label: str) -> RowError:
    """Return the problem of a row whose id (compared case-blind) an earlier row already has."""
    return RowError(
        number, "external_id", f"{external_id} already appears on {row_label} {earlier}.", row_label
    )


@functools.lru_cache(maxsize=256)
def column_name(name: str) -> str:
    """Return the item field a column (or JSON key) names, past spelling and aliases."""
    key = re.sub(r"[\s-]+", "_", name.strip().lower())
    return COLUMN_ALIASES.get(key, key)


def unknown_or_repeated_columns(columns: list[str]) -> str:
    """Return what is wrong with a set of column names for an item file ("": nothing)."""
    unknown = [name for name in columns if name not in ITEM_FIELDS]
    if unknown:
        return (
            f"Unknown column{'s' if len(unknown) > 1 else ''} {', '.join(repr(n) for n in unknown)}; "
            f"item files have {', '.join(ITEM_FIELDS)}."
        )
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if repeated:
        return f"Column {', '.join(repr(n) for n in repeated)} appears more than once."
    return ""


def missing_columns(columns: list[str]) -> str:
    """Return which required columns are missing ("": none)."""
    missing = [name for name in REQUIRED_FIELDS if name not in columns]
    if missing:
        return f"Missing column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}."
    return ""


def check_row(
    number: int, record: Mapping[str, object], row_label: str
) -> tuple[ItemRow | None, list[RowError]]:
    """Return the row normalised, or None and every problem of its fields."""
    values, errors = checked_values(number, record, row_label)
    return (ItemRow(row=number, **values) if values is not None else None), errors


def checked_values(
    number: int, record: Mapping[str, object], row_label: str
) -> tuple[dict[str, str] | None, list[RowError]]:
    """Return a row's values normalised (in ITEM_FIELDS order), or None and every problem of its
    fields: the one home of the rules a row must follow, for every way items are imported."""
    errors: list[RowError] = []

    def fail(name: str, message: str) -> None:
        errors.append(RowError(number, name, message, row_label))

    values: dict[str, str] = {}
    for name in ITEM_FIELDS:
        raw = record.get(name)
        if raw is None:
            values[name] = ""
        elif isinstance(raw, str):
            values[name] = raw.strip()
            if "\x00" in raw:  # PostgreSQL cannot store it, and no script holds one
                fail(name, "holds a NUL character (\\0); is the file UTF-16 or binary?")
                values[name] = ""
        elif name == "external_id" and isinstance(raw, int) and not isinstance(raw, bool):
            values[name] = str(raw)
        else:
            fail(name, f"must be text, not {type(raw).__name__}.")
            values[name] = ""

    for name in REQUIRED_FIELDS:
        if not values[name] and not (errors and any(error.field == name for error in errors)):
            fail(name, "is required.")

    external_id = values["external_id"]
    if external_id and not EXTERNAL_ID_PATTERN.fullmatch(external_id):
        shown = external_id if len(external_id) <= 80 else external_id[:80] + "…"
        fail(
            "external_id",
            f"{shown!r} is not a usable id: up to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit.",
        )
    for name, limit in (
        ("text", MAX_TEXT_CHARS),
        ("emotion_variant", MAX_VARIANT_CHARS),
        ("instructions", MAX_INSTRUCTIONS_CHARS),
    ):
        if len(values[name]) > limit:
            fail(name, f"is {len(values[name])} characters long; the limit is {limit}.")

    for name in VOCABULARY_FIELDS:
        given = values[name]
        normalised = _vocabulary_value(name, given)
        if normalised is not None:
            values[name] = normalised
        else:
            shown = given if len(given) <= 80 else given[:80] + "…"
            fail(name, f"{shown!r} is not one of {', '.join(VOCABULARY_FIELDS[name])}.")

    if errors:
        return None, errors
    return values, errors


VOCABULARY_FIELDS = {
    "scenario": SCENARIOS,
    "target_emotion": EMOTIONS,
    "target_intensity": INTENSITIES,
    "split": SPLITS,
}
_DEFAULTS = {"target_intensity": DEFAULT_INTENSITY, "split": DEFAULT_SPLIT}


@functools.lru_cache(maxsize=4096)
def _vocabulary_value(name: str, given: str) -> str | None:
    """Return the stored spelling of a vocabulary value (None: not one); a file repeats a handful."""
    if not given:
        return _DEFAULTS.get(name, "")
    normalised = re.sub(r"[\s_]+", "-", given.lower())
    normalised = VALUE_ALIASES.get(name, {}).get(normalised, normalised)
    return normalised if normalised in VOCABULARY_FIELDS[name] else None


_MATCH_EXTERNAL_ID = EXTERNAL_ID_PATTERN.fullmatch


def quick_values(raw: RawRow) -> tuple[str, ...] | None:
    """Return a row's values normalised, in ITEM_FIELDS order, when they are text that passes every
    rule of `checked_values` as it stands; None leaves the row to `checked_values` (a problem, or a
    value that is not text). The same rules, written once more as one pass over a row because an
    import spends most of its time here: `tests/.../test_quick_values.py` holds the two together."""
    try:
        external_id, text, scenario, emotion, variant, intensity, instructions, split = map(str.strip, raw)  # type: ignore[arg-type]
    except TypeError:  # a value that is not text (a JSON number, null): `checked_values` decides
        return None
    if (
        "\x00" in "".join(raw)  # type: ignore[arg-type]
        or not (text and scenario and emotion)
        or _MATCH_EXTERNAL_ID(external_id) is None
        or len(text) > MAX_TEXT_CHARS
        or len(variant) > MAX_VARIANT_CHARS
        or len(instructions) > MAX_INSTRUCTIONS_CHARS
    ):
        return None
    vocabulary = _KNOWN_VOCABULARY.get((scenario, emotion, intensity, split)) or _vocabulary_of(
        scenario, emotion, intensity, split
    )
    if vocabulary is None:
        return None
    scenario, emotion, intensity, split = vocabulary
    return (external_id, text, scenario, emotion, variant, intensity, instructions, split)


# The four vocabulary values of rows met so far, normalised: a file repeats a few dozen mixes, and
# one lookup of the four costs a quarter of four.
_KNOWN_VOCABULARY: dict[tuple[str, str, str, str], tuple[str, str, str, str]] = {}


def _vocabulary_of(
    scenario: str, emotion: str, intensity: str, split: str
) -> tuple[str, str, str, str] | None:
    normalised = (
        _vocabulary_value("scenario", scenario),
        _vocabulary_value("target_emotion", emotion),
        _vocabulary_value("target_intensity", intensity),
        _vocabulary_value("split", split),
    )
    if None in normalised:
        return None
    if len(_KNOWN_VOCABULARY) < 4096:  # bounded, whatever a hostile file spells
        _KNOWN_VOCABULARY[(scenario, emotion, intensity, split)] = normalised  # type: ignore[assignment]
    return normalised  # type: ignore[return-value]
