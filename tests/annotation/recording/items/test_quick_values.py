"""The shortcut through a row's rules (`quick_values`) accepts exactly what `checked_values` accepts,
with the same values, and leaves every other row to it."""

from __future__ import annotations

import itertools
import random

from annotation.recording.item_import.rules import ITEM_FIELDS, checked_values, quick_values

# Values each field may take in a file: right, aliased, oddly spelled, wrong, not text at all.
CHOICES: dict[str, list[object]] = {
    "external_id": ["EE-1", " ee.2 ", "", "-bad", "x" * 64, "x" * 65, "id with space", 7, None, "EE\x00"],
    "text": ["Hello.", "  padded  ", "", "a" * 2000, "a" * 2001, "tab\there", "line\nbreak", None, 3.5],
    "scenario": ["implicit", "Emotional-Shift", "high arousal", "sarcastic", "", None, "IMPLICIT"],
    "target_emotion": ["sad", "Joy", "anger", "gloomy", "", None, ["sad"]],
    "emotion_variant": ["", "anxiety", "v" * 64, "v" * 65, None],
    "target_intensity": ["", "high", "Low ", "extreme", None],
    "instructions": ["", "Say it slowly.", "i" * 4000, "i" * 4001, None],
    "split": ["", "train", "Test", "holdout", None],
}


def agree(raw: tuple[object, ...]) -> None:
    quick = quick_values(raw)
    values, problems = checked_values(5, dict(zip(ITEM_FIELDS, raw, strict=True)), "row")
    if quick is not None:
        assert values is not None and quick == tuple(values.values()), raw
    elif all(isinstance(value, str) for value in raw):
        assert values is None and problems, raw  # a text-only row it leaves is a row with a problem


def test_the_shortcut_agrees_with_the_rules_field_by_field() -> None:
    base = ("EE-1", "Hello.", "implicit", "sad", "", "", "", "")
    for index, name in enumerate(ITEM_FIELDS):
        for choice in CHOICES[name]:
            agree((*base[:index], choice, *base[index + 1 :]))


def test_the_shortcut_agrees_with_the_rules_on_random_rows() -> None:
    draw = random.Random(27)
    for _ in range(20_000):
        agree(tuple(draw.choice(CHOICES[name]) for name in ITEM_FIELDS))


def test_the_shortcut_takes_the_plain_rows() -> None:
    plain = [
        ("EE-1", "Hello.", s, e, "", "", "", "train")
        for s, e in itertools.product(["implicit"], ["sad", "joy"])
    ]
    assert [quick_values(row) for row in plain] == [
        ("EE-1", "Hello.", "implicit", "sad", "", "medium", "", "train"),
        ("EE-1", "Hello.", "implicit", "happy", "", "medium", "", "train"),
    ]
