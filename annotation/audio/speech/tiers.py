"""Praat TextGrid and ELAN .eaf files, read and written (pure: no Django).

A `TierSet` is what both formats share: named interval tiers over one recording. TextGrids are
written in Praat's long text format and read in the long or the short format (UTF-8 or the UTF-16
Praat writes when a label is not ASCII); point tiers ("TextTier") read as zero-length intervals.
Praat's interval tiers cover the whole recording, so the writer fills the gaps with empty
intervals and the reader drops them. EAF (ELAN's XML, times in milliseconds) is read with
ElementTree after a first pass that refuses any DOCTYPE or entity declaration: an uploaded file
is hostile until read, and an entity is how XML bombs and file reads are smuggled in.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
import xml.parsers.expat
from dataclasses import dataclass

MAX_FILE_BYTES = 5 * 1024 * 1024  # a take's tiers are a few kB; far more is no annotation file


class TierFileError(ValueError):
    """The file is no TextGrid or EAF this studio can read (the message says why and where)."""


@dataclass(frozen=True)
class Interval:
    start: float  # seconds
    end: float
    label: str


@dataclass(frozen=True)
class Tier:
    name: str
    intervals: tuple[Interval, ...]


@dataclass(frozen=True)
class TierSet:
    duration: float  # seconds: the recording's length (a TextGrid's xmax)
    tiers: tuple[Tier, ...]

    def tier(self, name: str) -> Tier | None:
        return next((tier for tier in self.tiers if tier.name == name), None)


# --- TextGrid ---------------------------------------------------------------------------------


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _number(value: float) -> str:
    """Return seconds to the microsecond, without trailing zeros ("1.5", "0")."""
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


def _filled(tier: Tier, duration: float) -> list[Interval]:
    """Return the tier's intervals with empty ones filling every gap from 0 to `duration`."""
    filled: list[Interval] = []
    cursor = 0.0
    for interval in sorted(tier.intervals, key=lambda interval: interval.start):
        if interval.start > cursor:
            filled.append(Interval(cursor, interval.start, ""))
        filled.append(interval)
        cursor = max(cursor, interval.end)
    if cursor < duration:
        filled.append(Interval(cursor, duration, ""))
    return filled


def write_textgrid(tiers: TierSet) -> bytes:
    """Return the tiers as a Praat TextGrid in the long text format (UTF-8)."""
    lines = [
        'File type = "ooTextFile"',
        'Object class = "TextGrid"',
        "",
        "xmin = 0 ",
        f"xmax = {_number(tiers.duration)} ",
        "tiers? <exists> ",
        f"size = {len(tiers.tiers)} ",
        "item []: ",
    ]
    for number, tier in enumerate(tiers.tiers, start=1):
        intervals = _filled(tier, tiers.duration)
        lines += [
            f"    item [{number}]:",
            '        class = "IntervalTier" ',
            f"        name = {_quoted(tier.name)} ",
            "        xmin = 0 ",
            f"        xmax = {_number(tiers.duration)} ",
            f"        intervals: size = {len(intervals)} ",
        ]
        for index, interval in enumerate(intervals, start=1):
            lines += [
                f"        intervals [{index}]:",
                f"            xmin = {_number(interval.start)} ",
                f"            xmax = {_number(interval.end)} ",
                f"            text = {_quoted(interval.label)} ",
            ]
    return ("\n".join(lines) + "\n").encode("utf-8")


# Values in either format: quoted strings ("" inside is a quote), numbers, <exists>/<absent>. In
# the long format the keys ("xmin =", "item [1]:") are skipped: only values carry meaning.
_TOKEN = re.compile(r'"((?:[^"]|"")*)"|(<exists>|<absent>)|\[[^\]]*\]|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')


def _decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TierFileError(f"the file is neither UTF-8 nor UTF-16 text ({exc.reason})") from None


def read_textgrid(data: bytes) -> TierSet:
    """Return the tiers of a TextGrid in Praat's long or short text format."""
    if len(data) > MAX_FILE_BYTES:
        raise TierFileError(f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    text = _decode(data)
    tokens: list[str | float] = []
    for match in _TOKEN.finditer(text):
        quoted, flag, number = match.groups()
        if quoted is not None:
            tokens.append(quoted.replace('""', '"'))
        elif flag is not None:
            tokens.append(flag)
        elif number is not None:
            tokens.append(float(number))
    reader = _Tokens(tokens)
    if reader.text("the file type") != "ooTextFile" or reader.text("the object class") != "TextGrid":
        raise TierFileError(
            'not a TextGrid: it must start with File type = "ooTextFile", Object class = "TextGrid"'
        )
    start, end = reader.number("xmin"), reader.number("xmax")
    if reader.text("the tiers flag") != "<exists>":
        return TierSet(end - start, ())
    tiers = []
    for _ in range(int(reader.number("the number of tiers"))):
        kind, name = reader.text("a tier's class"), reader.text("a tier's name")
        reader.number(f"tier {name!r} xmin")
        reader.number(f"tier {name!r} xmax")
        count = int(reader.number(f"tier {name!r}'s size"))
        intervals = []
        for _ in range(count):
            if kind == "IntervalTier":
                left, right = (
                    reader.number(f"an interval of {name!r}"),
                    reader.number(f"an interval of {name!r}"),
                )
            elif kind == "TextTier":
                left = right = reader.number(f"a point of {name!r}")
            else:
                raise TierFileError(f"tier {name!r} has the unknown class {kind!r}")
            label = reader.text(f"a label of {name!r}")
            if right < left:
                raise TierFileError(f"tier {name!r}: an interval ends ({right}) before it starts ({left})")
            if label.strip():
                intervals.append(Interval(left, right, label))
        tiers.append(Tier(name, tuple(intervals)))
    return TierSet(end - start, tuple(tiers))


class _Tokens:
    def __init__(self, tokens: list[str | float]) -> None:
        self._tokens, self._at = tokens, 0

    def _next(self, what: str) -> str | float:
        if self._at >= len(self._tokens):
            raise TierFileError(f"the file ends where {what} was expected")
        self._at += 1
        return self._tokens[self._at - 1]

    def text(self, what: str) -> str:
        value = self._next(what)
        if not isinstance(value, str):
            raise TierFileError(f"{what} must be text, found the number {value:g}")
        return value

    def number(self, what: str) -> float:
        value = self._next(what)
        if not isinstance(value, float):
            raise TierFileError(f"{what} must be a number, found {value!r}")
        return value


# --- ELAN EAF ---------------------------------------------------------------------------------


def write_eaf(tiers: TierSet, media_name: str = "") -> bytes:
    """Return the tiers as an ELAN annotation document (EAF 3.0; times in milliseconds)."""
    root = ElementTree.Element(
        "ANNOTATION_DOCUMENT",
        {"AUTHOR": "EchoStudio", "DATE": "1970-01-01T00:00:00Z", "FORMAT": "3.0", "VERSION": "3.0"},
    )
    header = ElementTree.SubElement(root, "HEADER", {"MEDIA_FILE": "", "TIME_UNITS": "milliseconds"})
    if media_name:
        ElementTree.SubElement(
            header, "MEDIA_DESCRIPTOR", {"MEDIA_URL": media_name, "MIME_TYPE": "audio/x-wav"}
        )
    order = ElementTree.SubElement(root, "TIME_ORDER")
    slots: dict[int, str] = {}

    def slot(seconds: float) -> str:
        milliseconds = round(seconds * 1000)
        if milliseconds not in slots:
            slots[milliseconds] = f"ts{len(slots) + 1}"
        return slots[milliseconds]

    tier_elements = []
    annotation_number = 0
    for tier in tiers.tiers:
        element = ElementTree.Element("TIER", {"LINGUISTIC_TYPE_REF": "default-lt", "TIER_ID": tier.name})
        for interval in tier.intervals:
            annotation_number += 1
            alignable = ElementTree.SubElement(
                ElementTree.SubElement(element, "ANNOTATION"),
                "ALIGNABLE_ANNOTATION",
                {
                    "ANNOTATION_ID": f"a{annotation_number}",
                    "TIME_SLOT_REF1": slot(interval.start),
                    "TIME_SLOT_REF2": slot(interval.end),
                },
            )
            ElementTree.SubElement(alignable, "ANNOTATION_VALUE").text = interval.label
        tier_elements.append(element)
    for milliseconds, slot_id in sorted(slots.items(), key=lambda entry: int(entry[1][2:])):
        ElementTree.SubElement(order, "TIME_SLOT", {"TIME_SLOT_ID": slot_id, "TIME_VALUE": str(milliseconds)})
    root.extend(tier_elements)
    ElementTree.SubElement(
        root,
        "LINGUISTIC_TYPE",
        {"GRAPHIC_REFERENCES": "false", "LINGUISTIC_TYPE_ID": "default-lt", "TIME_ALIGNABLE": "true"},
    )
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _refuse_declarations(data: bytes) -> None:
    """Raise TierFileError for a DOCTYPE or entity declaration (checked by expat, so no encoding
    hides one), or for XML that is not well formed."""

    def refuse(*_: object) -> None:
        raise TierFileError("the file declares a DOCTYPE or entities, which an EAF never needs: refused")

    parser = xml.parsers.expat.ParserCreate()
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse  # type: ignore[assignment]
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise TierFileError(f"not well-formed XML ({exc})") from None


def read_eaf(data: bytes) -> TierSet:
    """Return the time-aligned tiers of an ELAN .eaf file."""
    if len(data) > MAX_FILE_BYTES:
        raise TierFileError(f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    _refuse_declarations(data)
    root = ElementTree.fromstring(data)
    if root.tag != "ANNOTATION_DOCUMENT":
        raise TierFileError(f"not an EAF: the root element is <{root.tag}>, not <ANNOTATION_DOCUMENT>")
    times: dict[str, float | None] = {}
    for slot in root.iter("TIME_SLOT"):
        value = slot.get("TIME_VALUE")
        times[slot.get("TIME_SLOT_ID", "")] = int(value) / 1000 if value and value.isdigit() else None
    tiers = []
    for element in root.findall("TIER"):
        name = element.get("TIER_ID", "")
        intervals = []
        for annotation in element.iter("ANNOTATION"):
            alignable = annotation.find("ALIGNABLE_ANNOTATION")
            if alignable is None:
                raise TierFileError(
                    f"tier {name!r} holds annotations without times (a symbolic tier): it cannot be placed"
                )
            start = times.get(alignable.get("TIME_SLOT_REF1", ""))
            end = times.get(alignable.get("TIME_SLOT_REF2", ""))
            if start is None or end is None:
                raise TierFileError(
                    f"tier {name!r}: annotation {alignable.get('ANNOTATION_ID')} has an unaligned time slot"
                )
            if end < start:
                raise TierFileError(
                    f"tier {name!r}: annotation {alignable.get('ANNOTATION_ID')} ends before it starts"
                )
            label = alignable.findtext("ANNOTATION_VALUE") or ""
            if label.strip():
                intervals.append(Interval(start, end, label))
        tiers.append(Tier(name, tuple(sorted(intervals, key=lambda interval: interval.start))))
    duration = max((interval.end for tier in tiers for interval in tier.intervals), default=0.0)
    return TierSet(duration, tuple(tiers))


def read_tier_file(name: str, data: bytes) -> TierSet:
    """Return the tiers of a .TextGrid or .eaf file, chosen by its name."""
    lowered = name.lower()
    if lowered.endswith(".eaf"):
        return read_eaf(data)
    if lowered.endswith(".textgrid"):
        return read_textgrid(data)
    raise TierFileError(f"{name!r} is neither a .TextGrid nor an .eaf file")
