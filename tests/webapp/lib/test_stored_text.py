"""Model text escaped reversibly where a database would refuse it (no database)."""

from __future__ import annotations

import random

import pytest

from webapp.lib.stored_text import (
    MARKER,
    describe,
    escape,
    escape_value,
    needs_escape,
    refused_characters,
    unescape,
    without_refused,
)

EDGE_CASES = [
    "",
    "plain text stays as it is",
    "a\x00b",
    "\x00",
    "\ud800",
    "\udfff\ud800",  # two lone halves in the wrong order
    "\\x00 is not a NUL, \x00 is",
    "\\",
    "\\\\ud800 and \ud800",
    MARKER,
    MARKER + "looks escaped but is not",
    "ends with a backslash \\",
]


def _random_text(rng: random.Random) -> str:
    alphabet = ["a", " ", "\\", "x", "0", "u", "d", "8", "\x00", "\ud800", "\udc00", "é", MARKER[0], MARKER]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))


@pytest.mark.parametrize("text", EDGE_CASES)
def test_escape_then_unescape_gives_the_text_back(text: str) -> None:
    stored = escape(text)
    assert unescape(stored) == text
    assert "\x00" not in stored
    stored.encode("utf-8")  # no lone surrogate left: every backend can be sent it


def test_the_round_trip_holds_for_thousands_of_random_texts() -> None:
    rng = random.Random(38)
    for _ in range(5000):
        text = _random_text(rng)
        stored = escape(text)
        assert unescape(stored) == text, repr(text)
        assert not refused_characters(stored)


def test_text_a_database_takes_is_left_exactly_as_it_is() -> None:
    for text in ("I am here.", "C:\\path\\x00 as typed", "emoji 🙂"):
        assert not needs_escape(text)
        assert escape(text) == text == unescape(text)


def test_values_are_escaped_keys_included_and_the_characters_counted() -> None:
    value, found = escape_value({"a\x00": ["x\ud800", 3, None], "b": {"c": "\x00\x00"}})
    assert describe(found) == "3 NUL characters, 1 lone surrogate"
    assert [unescape(key) for key in value] == ["a\x00", "b"]
    assert unescape(value[escape("a\x00")][0]) == "x\ud800"
    assert value[escape("a\x00")][1:] == [3, None]


def test_a_synthesiser_is_given_the_text_without_refused_characters() -> None:
    assert without_refused("I\x00 am\ud800 here") == "I am here"


def test_unescape_refuses_a_text_that_escape_could_not_have_made() -> None:
    with pytest.raises(ValueError, match="escapes nothing"):
        unescape(MARKER + "a stray \\ backslash")


def test_a_value_with_nothing_to_escape_is_returned_itself() -> None:
    value = {"a": ["b", 1.5, float("nan")], "c": None}
    assert escape_value(value)[0] is value
