"""Text from models kept faithfully on every database: the characters a backend refuses, escaped reversibly.

A model may emit anything: a NUL character (PostgreSQL refuses it in text and in jsonb) or a lone
surrogate (no UTF-8 encoder writes one, so neither SQLite nor PostgreSQL can be sent it). Such
text is neither refused nor cleaned: ``escape`` turns it into text every backend stores, and
``unescape`` gives the model's text back, character for character. Text without such characters
is left exactly as it is, so only the rare escaped value differs from what the model said, and
the row holding it is flagged.

An escaped value starts with ``MARKER``; in its body a backslash is written ``\\\\``, NUL
``\\x00`` and a lone surrogate ``\\udc80``-style (its four hex digits). A text that happens to start with the marker is escaped
too, so ``unescape(escape(text)) == text`` for every ``str``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Final

MARKER: Final = "\u2063escaped:"  # an invisible separator, then a word a reader can see
_REFUSED = re.compile("[\x00\ud800-\udfff]")
_ESCAPED = re.compile(r"\\(\\|x00|u[dD][89a-fA-F][0-9a-fA-F]{2})")


def refused_characters(text: str) -> Counter[str]:
    """Return how many characters of `text` no backend can store, by kind ("NUL", "lone surrogate")."""
    return Counter("NUL" if char == "\x00" else "lone surrogate" for char in _REFUSED.findall(text))


def without_refused(text: str) -> str:
    """Return `text` without the characters no backend stores (what a speech synthesiser is given)."""
    return _REFUSED.sub("", text)


def needs_escape(text: str) -> bool:
    """Return True when `text` must be escaped to be stored (or would be misread as escaped)."""
    return bool(_REFUSED.search(text)) or text.startswith(MARKER)


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    if char == "\\":
        return "\\\\"
    if char == "\x00":
        return "\\x00"
    return f"\\u{ord(char):04x}"


def escape(text: str) -> str:
    """Return `text` as every backend stores it: unchanged unless it holds refused characters."""
    if not needs_escape(text):
        return text
    return MARKER + re.sub("[\\\\\x00\ud800-\udfff]", _escape_char, text)


def _unescape_char(match: re.Match[str]) -> str:
    code = match.group(1)
    if code == "\\":
        return "\\"
    if code == "x00":
        return "\x00"
    return chr(int(code[1:], 16))


def unescape(text: str) -> str:
    """Return the text `escape` was given (a text that was not escaped comes back as it is)."""
    if not text.startswith(MARKER):
        return text
    body = text[len(MARKER) :]
    stray = re.sub(r"\\(\\|x00|u[dD][89a-fA-F][0-9a-fA-F]{2})", "", body)
    if "\\" in stray:
        raise ValueError("not an escaped text: a backslash that escapes nothing")
    return _ESCAPED.sub(_unescape_char, body)


def escape_value(value: Any) -> tuple[Any, Counter[str]]:
    """Return a JSON-like value (str, list, dict) with every string in it escaped (keys too), and
    the refused characters found, by kind. A value with nothing to escape is returned itself (the
    same object), so a caller can tell with ``is``."""
    found: Counter[str] = Counter()

    def walk(current: Any) -> Any:
        if isinstance(current, str):
            found.update(refused_characters(current))
            return escape(current)
        if isinstance(current, list):
            items = [walk(item) for item in current]
            unchanged = all(new is old for new, old in zip(items, current, strict=True))
            return current if unchanged else items
        if isinstance(current, dict):
            pairs = [(walk(key), walk(item)) for key, item in current.items()]
            unchanged = all(
                new_key is key and new is old
                for (new_key, new), (key, old) in zip(pairs, current.items(), strict=True)
            )
            return current if unchanged else dict(pairs)
        return current

    return walk(value), found


def describe(found: Counter[str]) -> str:
    """Return the refused characters found, in words ("1 NUL character, 2 lone surrogates")."""
    parts = []
    for kind in ("NUL", "lone surrogate"):
        count = found.get(kind, 0)
        if count:
            noun = "NUL character" if kind == "NUL" else kind
            parts.append(f"{count} {noun}{'' if count == 1 else 's'}")
    return ", ".join(parts)


def escaped_note(described: str, backend: str) -> str:
    """Return what an import says of a row whose text was escaped (`describe`), naming the database in use."""
    return (
        f"text escaped: {described}, kept as \\x00 / \\udc80-style escapes so the text is stored alike on "
        f"every database (here {backend}); webapp.lib.stored_text.unescape gives the model's text back"
    )
