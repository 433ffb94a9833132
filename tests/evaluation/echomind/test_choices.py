"""Reading multiple-choice answers: the documented patterns read, anything else is unparseable."""

from __future__ import annotations

import pytest

from evaluation.echomind.choices import read_choice

OPTIONS = ["Happy", "Sad", "Angry", "Neutral"]


@pytest.mark.parametrize(
    ("text", "letter", "pattern"),
    [
        ("The answer is: [B]", "B", "stated"),
        ("Listening closely... The answer is: [C].", "C", "stated"),
        ("Answer: (A)", "A", "stated"),
        ("the answer is D", "D", "stated"),
        ("[D]", "D", "lone letter"),
        ("(b).", "B", "lone letter"),
        ("B. Sad", "B", "opening letter"),
        ("(c) angry", "C", "opening letter"),
        ("sad.", "B", "option text"),
    ],
)
def test_documented_patterns_are_read(text: str, letter: str, pattern: str) -> None:
    reading = read_choice(text, OPTIONS)
    assert (reading.letter, reading.pattern) == (letter, pattern)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("I think it sounds sad or maybe angry", "unparseable"),
        ("The answer is a tricky one", "unparseable"),  # "a" the article, not option A
        ("The answer is: [B]. On reflection the answer is A", "several letters stated"),
        ("The answer is: [F]", "no such option"),
        ("B sad", "unparseable"),
        ("", "unparseable"),
    ],
)
def test_anything_else_is_never_guessed(text: str, why: str) -> None:
    reading = read_choice(text, OPTIONS)
    assert (reading.letter, reading.pattern) == (None, why)
