"""Praat TextGrid and ELAN EAF, both ways: a take's tiers written and read back to the millisecond,
the short TextGrid format and UTF-16 read, hostile XML and unplaceable tiers refused."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.audio.speech.tiers import (
    Interval,
    Tier,
    TierFileError,
    TierSet,
    read_eaf,
    read_textgrid,
    read_tier_file,
    write_eaf,
    write_textgrid,
)
from annotation.labelling.tier_labels import draft_from_tiers, take_tiers


def _intervals(tiers: TierSet, name: str) -> tuple[Interval, ...]:
    tier = tiers.tier(name)
    assert tier is not None, f"no tier {name}"
    return tier.intervals


WORDS = [
    Interval(0.312, 0.587, "Oh"),
    Interval(0.587, 1.004, "great,"),
    Interval(1.25, 1.731, "another"),
    Interval(1.731, 2.2035, "Monday"),
]
SEGMENTS: list[dict[str, Any]] = [
    {"start": 0.3, "end": 1.1, "emotion": "happy", "words": "Oh great,"},
    {"start": 1.1, "end": 2.4, "emotion": "sad", "words": "another Monday"},
]
PERCEPTION = {"stressed_words": ["great", "Monday"], "intonation": "falling", "emotion_segments": SEGMENTS}


@pytest.mark.parametrize(
    ("write", "name"), [(write_textgrid, "take.TextGrid"), (lambda t: write_eaf(t, "take.wav"), "take.eaf")]
)
def test_export_then_import_gives_the_same_regions_and_words_to_the_millisecond(write, name) -> None:
    draft = draft_from_tiers(read_tier_file(name, write(take_tiers(2.5, WORDS, PERCEPTION))), 2.5)
    assert [(round(w["start"], 3), round(w["end"], 3), w["text"]) for w in draft.words] == [
        (round(w.start, 3), round(w.end, 3), w.label) for w in WORDS
    ]
    assert draft.perception["stressed_words"] == ["great", "Monday"]
    assert draft.perception["intonation"] == "falling"
    assert [
        (round(s["start"], 3), round(s["end"], 3), s["emotion"], s["words"])
        for s in draft.perception["emotion_segments"]
    ] == [(s["start"], s["end"], s["emotion"], s["words"]) for s in SEGMENTS]


def test_the_textgrid_keeps_microseconds_and_fills_gaps_as_praat_needs() -> None:
    text = write_textgrid(take_tiers(2.5, WORDS, PERCEPTION)).decode()
    assert "xmax = 2.2035 " in text and 'text = "great," ' in text
    # The words tier covers 0-2.5 s: four words and the three silences around them.
    assert "intervals: size = 7 " in text.split('name = "stressed"')[0]
    assert _intervals(read_textgrid(text.encode()), "words") == tuple(WORDS)


SHORT = '''File type = "ooTextFile"
Object class = "TextGrid"

0
1.5
<exists>
2
"IntervalTier"
"words"
0
1.5
2
0
0.8
"say ""hi"""
0.8
1.5
""
"TextTier"
"emotion"
0
1.5
1
0.4
"happy"
'''


def test_the_short_format_and_utf16_are_read() -> None:
    for data in (SHORT.encode(), SHORT.encode("utf-16")):
        tiers = read_textgrid(data)
        assert tiers.duration == 1.5
        assert _intervals(tiers, "words") == (Interval(0.0, 0.8, 'say "hi"'),)
        assert _intervals(tiers, "emotion") == (Interval(0.4, 0.4, "happy"),)


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "a.eaf",
            b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><ANNOTATION_DOCUMENT>&a;</ANNOTATION_DOCUMENT>',
            "DOCTYPE or entities",
        ),
        ("a.eaf", b'<!DOCTYPE x SYSTEM "file:///etc/passwd"><ANNOTATION_DOCUMENT/>', "DOCTYPE or entities"),
        ("a.eaf", b"<ANNOTATION_DOCUMENT><TIER", "not well-formed XML"),
        ("a.eaf", b"<html/>", "not an EAF"),
        (
            "a.eaf",
            b'<ANNOTATION_DOCUMENT><TIER TIER_ID="gloss"><ANNOTATION><REF_ANNOTATION ANNOTATION_ID="a1"/></ANNOTATION></TIER></ANNOTATION_DOCUMENT>',
            "symbolic tier",
        ),
        ("a.TextGrid", b'File type = "ooTextFile"\nObject class = "Pitch 1"\n', "not a TextGrid"),
        ("a.TextGrid", SHORT.encode()[:120], "the file ends where"),
        ("a.txt", b"", "neither a .TextGrid nor an .eaf"),
    ],
)
def test_hostile_or_broken_files_are_refused_with_the_reason(name: str, data: bytes, message: str) -> None:
    with pytest.raises(TierFileError, match=message):
        read_tier_file(name, data)


@pytest.mark.parametrize(
    ("tiers_text", "message"),
    [
        ('"IntervalTier"\n"phones"\n0\n1\n1\n0\n1\n"AH"\n', "tier 'phones' cannot be placed"),
        ('"IntervalTier"\n"emotion"\n0\n1\n1\n0\n1\n"smug"\n', "'smug' at 0.000 s is not one of"),
        ('"IntervalTier"\n"emotion"\n0\n9\n1\n0\n9\n"sad"\n', "lies outside the take"),
    ],
)
def test_a_tier_that_cannot_be_placed_is_refused_by_name(tiers_text: str, message: str) -> None:
    data = f'File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n9\n<exists>\n1\n{tiers_text}'.encode()
    with pytest.raises(TierFileError, match=message):
        draft_from_tiers(read_textgrid(data), 2.0)


def test_eaf_times_are_whole_milliseconds() -> None:
    tiers = read_eaf(write_eaf(take_tiers(2.5, WORDS, PERCEPTION)))
    assert _intervals(tiers, "words")[-1] == Interval(1.731, 2.204, "Monday")  # 2203.5 ms rounds to even


HOSTILE_LABELS = ['say "hi"', "<b>&amp;</b>", 'x" \n item [2]:', "=SUM(1;2)", "]]><!--"]


@pytest.mark.parametrize(("write", "read"), [(write_textgrid, read_textgrid), (write_eaf, read_eaf)])
def test_hostile_labels_stay_inert_text_both_ways(write, read) -> None:
    """The per-item and bulk tier downloads (`annotation:item_tiers_download`, `annotation:tiers_download`)
    carry script words and labels people typed: quotes, markup or a line that looks like TextGrid
    syntax come back as the same text and never become structure (an extra tier or interval)."""
    tier = Tier(
        "words", tuple(Interval(i * 0.5, i * 0.5 + 0.4, label) for i, label in enumerate(HOSTILE_LABELS))
    )
    back = read(write(TierSet(2.5, (tier,))))
    assert [t.name for t in back.tiers] == ["words"]
    assert [i.label for i in back.tier("words").intervals if i.label] == HOSTILE_LABELS
