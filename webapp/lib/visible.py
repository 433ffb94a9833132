"""Text shown where control characters act: a terminal, an HTTP header. Every one shown escaped.

A system or judge name is typed by a person and reaches the ``echostudio`` client through the API;
printed raw, ``\\x1b]0;...\\x07`` retitles the window, ``\\x1b[2J`` clears it, a carriage return
overwrites the line before it, and U+202E turns what follows around. Every control, format and
line/paragraph-separator character is written as a visible escape (``\\x1b`` as ``\\u001b``, the
form JSON uses, so JSON output stays valid), except the line breaks and tabs a whole document keeps
between its lines and cells. The ``echostudio`` client prints through it, and a response header
naming a judge uses it (a line break in a header is refused by Django: a 500). Pure: no Django.
"""

from __future__ import annotations

import unicodedata

_HIDDEN = ("Cc", "Cf", "Cs", "Zl", "Zp")


def _shown(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str, keep: str = "\n\t") -> str:
    """Return `text` with every control, format and separator character escaped, but those in `keep`
    (a whole document keeps its line feeds and tabs; a single cell keeps none: ``keep=""``)."""
    if text.isprintable():
        return text
    return "".join(
        _shown(char) if char not in keep and unicodedata.category(char) in _HIDDEN else char for char in text
    )
