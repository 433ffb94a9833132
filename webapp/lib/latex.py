"""The one LaTeX escaper: text from people (system names, headings) made inert in a ``.tex`` export.

Every special character of plain TeX and LaTeX becomes the command that prints it, so no name can
open a group, start math, a comment, a parameter, an alignment cell or a command. That includes
``^``: TeX reads ``^^5c`` as a backslash and ``^^7b`` as a brace (its ``^^`` notation), so
``^^5cinput^^7b/etc/passwd^^7d`` would be ``\\input{/etc/passwd}`` had one caret been left. Also
escaped: ``<``, ``>`` and ``|`` (other glyphs in the default OT1 font) and ``[``/``]`` (a row that
starts with ``[`` would be read as the optional argument of the ``\\\\`` ending the row before).
Line and record breaks and other control characters become a space: a blank line inside a table
cell is a paragraph break, and TeX refuses some control characters outright. Pure: no Django.
"""

from __future__ import annotations

import unicodedata

SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "[": "{[}",
    "]": "{]}",
}


def _escaped(char: str) -> str:
    special = SPECIALS.get(char)
    if special is not None:
        return special
    if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
        return " "
    return char


def latex_escape(text: str) -> str:
    """Return `text` as LaTeX that prints it: every special character escaped, breaks and control
    characters as spaces."""
    return "".join(_escaped(char) for char in text)
