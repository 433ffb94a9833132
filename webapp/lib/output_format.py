"""EchoChat's output format: one parser shared by judges, rewards, SDCA and AAA.

The model writes its reasoning trace, then the response::

    <think>
    <perception>...</perception>
    <reasoning>...</reasoning>
    <strategy>...</strategy>
    </think>
    <response>...</response>

Rules the parser enforces (each breach is one entry in ``ParsedOutput.problems``):

- every tag appears at most once, in the order above;
- ``<think>``, ``<perception>``, ``<reasoning>`` and ``<strategy>`` are present and closed;
- the response is either wrapped in ``<response>...</response>`` or is the plain text after
  ``</think>`` (both are well formed);
- no span is empty (whitespace only), and nothing but whitespace sits outside the spans.

Span offsets are character offsets into the parsed text, tags excluded and surrounding whitespace
trimmed, so ``text[span.start:span.end] == span.text``. When the output has no tag at all (a
baseline model that ignores the format), the whole text is taken as the response so judges can
still score it; the output is then not well formed.

Reasoning spans carry ``Context: / Latent need: / Core demand: / Constraints:`` lines (appendix
B.3's theory-of-mind fields); strategy spans carry ``Strategies: a; b`` and ``Speech style: calm``.

Pure Python on purpose: evaluation code imports this module without torch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

SpanName = Literal["perception", "reasoning", "strategy", "response"]
SPAN_NAMES: tuple[SpanName, ...] = ("perception", "reasoning", "strategy", "response")
REASONING_SPAN_NAMES: tuple[SpanName, ...] = ("perception", "reasoning", "strategy")

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
OUTPUT_TAGS: tuple[str, ...] = (
    THINK_OPEN,
    THINK_CLOSE,
    *(tag for name in SPAN_NAMES for tag in (f"<{name}>", f"</{name}>")),
)

# The order in which tags must appear; the response tags are optional (plain text after </think>).
_TAG_ORDER: tuple[str, ...] = (
    THINK_OPEN,
    "<perception>",
    "</perception>",
    "<reasoning>",
    "</reasoning>",
    "<strategy>",
    "</strategy>",
    THINK_CLOSE,
    "<response>",
    "</response>",
)
_REQUIRED_TAGS: tuple[str, ...] = _TAG_ORDER[:8]
_TAG_PATTERN = re.compile(r"</?(?:think|perception|reasoning|strategy|response)>")

REASONING_FIELDS: dict[str, str] = {
    "context": "Context",
    "latent_need": "Latent need",
    "core_demand": "Core demand",
    "constraints": "Constraints",
}
SPEECH_STYLES: tuple[str, ...] = ("comforting", "calm", "excited")

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_FIELD_LINE = re.compile(r"^\s*(?:[-*•]\s*)?(?P<label>[A-Za-z][A-Za-z ]*?)\s*[:：]\s*(?P<value>.*)$")
_STRATEGY_LABELS = ("strategies", "strategy", "recommended strategies")
_SPEECH_STYLE_LABELS = ("speech style", "style", "voice style", "delivery")
# "and" is no separator: ESConv names such as "Affirmation and Reassurance" contain it.
_LIST_SEPARATORS = re.compile(r"[;,|\n]")


@dataclass(frozen=True)
class Span:
    """A span's content: ``text == source[start:end]``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class ParsedOutput:
    text: str
    perception: Span | None
    reasoning: Span | None
    strategy: Span | None
    response: Span | None
    problems: list[str] = field(default_factory=list)

    @property
    def well_formed(self) -> bool:
        """Return True when the output follows the format exactly."""
        return not self.problems

    def spans(self) -> dict[SpanName, Span]:
        """Return the spans that were found, keyed by name, in output order."""
        found = {
            "perception": self.perception,
            "reasoning": self.reasoning,
            "strategy": self.strategy,
            "response": self.response,
        }
        return {name: span for name, span in found.items() if span is not None}  # type: ignore[misc]

    def span_text(self, name: SpanName) -> str:
        """Return a span's text, or "" when it is missing."""
        span = self.spans().get(name)
        return span.text if span is not None else ""


@dataclass(frozen=True)
class StrategyFields:
    strategies: list[str]
    speech_style: str | None


def _trimmed_span(text: str, start: int, end: int) -> Span:
    content = text[start:end]
    leading = len(content) - len(content.lstrip())
    stripped = content.strip()
    return Span(start + leading, start + leading + len(stripped), stripped)


def parse_output(text: str) -> ParsedOutput:
    """Return the four spans of ``text`` with the format problems found."""
    tags = [(match.group(0), match.start(), match.end()) for match in _TAG_PATTERN.finditer(text)]
    problems: list[str] = []
    first: dict[str, tuple[int, int]] = {}
    for tag, start, end in tags:
        if tag in first:
            if f"duplicate {tag}" not in problems:
                problems.append(f"duplicate {tag}")
        else:
            first[tag] = (start, end)

    has_response_tag = "<response>" in first or "</response>" in first
    for tag in (*_REQUIRED_TAGS, *(_TAG_ORDER[8:] if has_response_tag else ())):
        if tag not in first:
            problems.append(f"missing {tag}")

    present = [tag for tag in _TAG_ORDER if tag in first]
    if [first[tag][0] for tag in present] != sorted(first[tag][0] for tag in present):
        problems.append("wrong tag order")

    spans: dict[SpanName, Span | None] = {}
    for name in REASONING_SPAN_NAMES:
        spans[name] = _span_between(text, first, f"<{name}>", f"</{name}>")
    spans["response"] = _response_span(text, first, has_response_tag, bool(tags))

    for name in SPAN_NAMES:
        span = spans[name]
        if span is not None and not span.text:
            problems.append(f"empty {name}")
        if span is None and name == "response" and not has_response_tag and THINK_CLOSE in first:
            problems.append("missing response")

    if tags and _has_text_outside(text, tags, spans):
        problems.append("text outside spans")

    return ParsedOutput(
        text=text,
        perception=spans["perception"],
        reasoning=spans["reasoning"],
        strategy=spans["strategy"],
        response=spans["response"],
        problems=problems,
    )


def _span_between(text: str, first: dict[str, tuple[int, int]], open_tag: str, close_tag: str) -> Span | None:
    if open_tag not in first or close_tag not in first:
        return None
    start, end = first[open_tag][1], first[close_tag][0]
    if end < start:
        return None
    return _trimmed_span(text, start, end)


def _response_span(
    text: str, first: dict[str, tuple[int, int]], has_response_tag: bool, has_any_tag: bool
) -> Span | None:
    if has_response_tag:
        if "<response>" not in first:
            return None
        start = first["<response>"][1]
        end = first["</response>"][0] if "</response>" in first else len(text)
        return _trimmed_span(text, start, end) if end >= start else None
    if THINK_CLOSE in first:
        span = _trimmed_span(text, first[THINK_CLOSE][1], len(text))
        return span if span.text else None
    if not has_any_tag:
        return _trimmed_span(text, 0, len(text))
    return None


def _has_text_outside(
    text: str, tags: list[tuple[str, int, int]], spans: dict[SpanName, Span | None]
) -> bool:
    covered = bytearray(len(text))
    for _, start, end in tags:
        covered[start:end] = b"\x01" * (end - start)
    for span in spans.values():
        if span is not None:
            covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    return any(not covered[index] and not char.isspace() for index, char in enumerate(text))


def token_spans(
    parsed: ParsedOutput, offset_mapping: Sequence[tuple[int, int]], char_offset: int = 0
) -> dict[SpanName, tuple[int, int]]:
    """Return each span's token range ``[start, end)`` from a tokenizer's offset mapping.

    ``char_offset`` is where ``parsed.text`` begins in the tokenized string (0 when the parsed
    text was tokenized alone). A token belongs to a span when its characters overlap the span's;
    tokens with empty offsets (special tokens) are ignored. Spans no token overlaps are left out.
    """
    ranges: dict[SpanName, tuple[int, int]] = {}
    for name, span in parsed.spans().items():
        start, end = span.start + char_offset, span.end + char_offset
        hits = [
            index
            for index, (token_start, token_end) in enumerate(offset_mapping)
            if token_end > token_start and token_start < end and token_end > start
        ]
        if hits:
            ranges[name] = (hits[0], hits[-1] + 1)
    return ranges


def format_reward(parsed: ParsedOutput) -> float:
    """Return 1.0 for a well-formed output, else 0.0 (r_fmt of section 3.2.3)."""
    return 1.0 if parsed.well_formed else 0.0


def render_output(perception: str, reasoning: str, strategy: str, response: str) -> str:
    """Return the text the model is trained to emit for these four spans."""
    return (
        f"{THINK_OPEN}\n<perception>{perception.strip()}</perception>\n"
        f"<reasoning>{reasoning.strip()}</reasoning>\n"
        f"<strategy>{strategy.strip()}</strategy>\n{THINK_CLOSE}\n"
        f"<response>{response.strip()}</response>"
    )


def render_reasoning(context: str, latent_need: str, core_demand: str, constraints: str) -> str:
    """Return a reasoning span's text with the four theory-of-mind fields, one per line."""
    values = {
        "context": context,
        "latent_need": latent_need,
        "core_demand": core_demand,
        "constraints": constraints,
    }
    return "\n".join(f"{label}: {values[key].strip()}" for key, label in REASONING_FIELDS.items())


def render_strategy(strategies: Sequence[str], speech_style: str | None) -> str:
    """Return a strategy span's text: the chosen strategies, then the speech style when given."""
    lines = [f"Strategies: {'; '.join(name.strip() for name in strategies)}"]
    if speech_style:
        lines.append(f"Speech style: {speech_style.strip()}")
    return "\n".join(lines)


def _labelled_lines(text: str) -> list[tuple[str | None, str]]:
    """Split text into (label, value) pairs.

    An unlabelled line continues the previous value; a bulleted one is a new list item, joined to a
    labelled value with a newline (a list separator) or standing alone after unlabelled items.
    """
    entries: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _FIELD_LINE.match(line)
        bullet = _BULLET.match(line)
        if match:
            entries.append((match.group("label").strip().lower(), match.group("value").strip()))
        elif bullet and (not entries or entries[-1][0] is None):
            entries.append((None, line[bullet.end() :].strip()))
        elif bullet:
            label, value = entries[-1]
            entries[-1] = (label, f"{value}\n{line[bullet.end() :].strip()}".strip())
        elif entries:
            label, value = entries[-1]
            entries[-1] = (label, f"{value} {line.strip()}".strip())
        else:
            entries.append((None, line.strip()))
    return entries


def parse_reasoning_fields(reasoning_text: str) -> dict[str, str]:
    """Return the theory-of-mind fields found in a reasoning span, keyed context/latent_need/...

    Labels are matched case-insensitively; a field's value may continue on following unlabelled
    lines. Fields that are absent are left out (judges cap the score for missing fields).
    """
    by_label = {label.lower(): key for key, label in REASONING_FIELDS.items()}
    fields: dict[str, str] = {}
    for label, value in _labelled_lines(reasoning_text):
        key = by_label.get(label or "")
        if key is not None and key not in fields:
            fields[key] = value
    return fields


def _normalise_name(name: str) -> str:
    return " ".join(name.strip().strip(".-*•").split()).lower()


def parse_strategy_fields(strategy_text: str) -> StrategyFields:
    """Return the strategy names and the speech style of a strategy span.

    Strategy names come from a ``Strategies:`` (or ``Strategy:``) line, split on ``;``, ``,``,
    and ``|``; without such a line every unlabelled line is read as a list of names.
    Names are lower-cased with whitespace collapsed so they compare with gold labels.
    """
    entries = _labelled_lines(strategy_text)
    raw_lists = [value for label, value in entries if label in _STRATEGY_LABELS]
    if not raw_lists:
        raw_lists = [value for label, value in entries if label is None]
    names: list[str] = []
    for raw in raw_lists:
        for piece in _LIST_SEPARATORS.split(raw):
            name = _normalise_name(piece)
            if name and name not in names:
                names.append(name)
    style = next((_normalise_name(value) for label, value in entries if label in _SPEECH_STYLE_LABELS), None)
    return StrategyFields(strategies=names, speech_style=style or None)


def parse_strategy_names(strategy_text: str) -> list[str]:
    """Return the normalised strategy names of a strategy span."""
    return parse_strategy_fields(strategy_text).strategies
