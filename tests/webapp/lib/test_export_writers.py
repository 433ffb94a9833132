"""The one LaTeX escaper, JSON Lines writer and control-character display, and that every export
module goes through the shared writers (issue 40) rather than a twin of its own."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from webapp.lib.jsonlines import json_line, json_text
from webapp.lib.latex import SPECIALS, latex_escape
from webapp.lib.visible import visible

ROOT = Path(__file__).resolve().parents[3]
HOSTILE = (
    "=cmd|' /C calc'!A0 =SUM(1;2) \u2028\u2029\x1c\x1d\x1e\x85\v\f "
    "^^5cinput^^7b/etc/passwd^^7d Qwen$2 a\r\nb\n\x1b]0;x\x07 \u202e [1pt] <|>"
)
# What an escaped name may hold besides plain text: the commands latex_escape writes.
LATEX_TOKENS = re.compile("|".join(re.escape(value) for value in SPECIALS.values()))


def test_latex_escape_leaves_no_special_character_and_no_caret_pair() -> None:
    escaped = latex_escape(HOSTILE)

    assert "^^" not in escaped and r"\input" not in escaped
    assert not re.search(r"[\\{}$&#^_~%<>|\[\]]", LATEX_TOKENS.sub("", escaped))
    assert not any(unicodedata.category(char) in ("Cc", "Zl", "Zp") for char in escaped)
    assert latex_escape("Qwen$2 & co_1") == r"Qwen\$2 \& co\_1"
    assert latex_escape("^^5c") == r"\textasciicircum{}\textasciicircum{}5c"


def test_a_json_line_is_one_line_and_the_same_value() -> None:
    value = {"name": HOSTILE, "astral": "\U000e0001 \U0001f600", "n": [1, 2.5, None]}

    line = json_line(value)

    assert line.endswith("\n") and len(line.splitlines()) == 1
    assert json.loads(line) == value
    assert "\U0001f600" in line and "é" in json_line("é")  # printable text stays readable
    assert json.loads(json_text(value, indent=2)) == value


def test_visible_text_shows_every_control_character_escaped() -> None:
    shown = visible(HOSTILE)

    assert not any(
        unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") and char not in "\n\t" for char in shown
    )
    assert "\\u001b]0;x\\u0007" in shown and "\\u2028" in shown and "\\u202e" in shown
    assert "\n" not in visible("a\nb", keep="") and visible("plain text") == "plain text"


# Hand-rolled writers the shared ones replace: csv.writer and pandas' to_csv, a LaTeX escaping
# table of its own, a JSON line joined by hand, a CSV read back by splitting lines.
TWINS = {
    "CSV writer": re.compile(r"csv\.(writer|DictWriter)\(|\.to_csv\("),
    "LaTeX escaper": re.compile(r"textbackslash|textasciicircum|_latex_escape"),
    # Raw Unicode in a line joined by hand (json.dumps' default ensure_ascii escapes it all).
    "JSON line": re.compile(r"json\.dumps\(.*ensure_ascii=False.*\)\s*\+\s*[\"']\\n[\"']"),
    "CSV split into lines": re.compile(r"to_(turn_)?csv\(.*\)\.splitlines\(\)"),
}
SHARED = {"spreadsheet.py", "latex.py", "jsonlines.py"}


@pytest.mark.parametrize("kind", TWINS)
def test_no_module_writes_an_export_around_the_shared_writers(kind: str) -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("annotation", "evaluation", "ml", "webapp")
        for path in (ROOT / folder).rglob("*.py")
        if not (path.parent.name == "lib" and path.name in SHARED) and TWINS[kind].search(path.read_text())
    ]
    assert offenders == []
