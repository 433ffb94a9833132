"""The one JSON Lines writer: one record per line, whatever a string in it holds.

``json.dumps(..., ensure_ascii=False)`` leaves U+2028, U+2029, ``\\x85`` and other invisible
characters raw. They are valid JSON, but a reader that splits lines the Unicode way
(``str.splitlines``, many editors and log tools) breaks the record there, and a terminal may act on
C1 control characters. Here every control, format and line/paragraph-separator character is
written as its ``\\u2028``-style escape (four hex digits): the same value for every JSON parser, one physical line per
record. Pure: no Django.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

_HIDDEN = ("Cc", "Cf", "Cs", "Zl", "Zp")  # controls, format characters, lone surrogates, separators


def _u_escape(code: int) -> str:
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # beyond the BMP: JSON's UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escape_hidden(text: str) -> str:
    if text.replace("\n", "").isprintable():  # the common case (isprintable is False for all of _HIDDEN)
        return text
    parts: list[str] = []
    for char in text:
        # A raw line feed is json.dumps's own indentation (inside a string it is already "\\n").
        if char != "\n" and unicodedata.category(char) in _HIDDEN:
            parts.append(_u_escape(ord(char)))
        else:
            parts.append(char)
    return "".join(parts)


def json_text(value: Any, **options: Any) -> str:
    """Return ``json.dumps(value, ensure_ascii=False, **options)`` with every hidden character escaped
    (a space or line break json.dumps itself writes for ``indent`` is left as it is)."""
    return _escape_hidden(json.dumps(value, ensure_ascii=False, **options))


def json_line(value: Any, **options: Any) -> str:
    """Return `value` as one JSON Lines record, with its line ending."""
    return json_text(value, **options) + "\n"
