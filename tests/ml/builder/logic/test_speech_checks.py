"""The builder's speech checks, computed by hand: rate against the neutral reading, stress heard
against it, agreement with the asked emphasis, a dialogue's speaker consistency, the build's sums."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ml.builder.logic.perception import prosody_levels
from ml.builder.logic.speech_checks import (
    SpeechCheckSummary,
    emphasis_agreement,
    rate_ratio,
    stressed_against_neutral,
    summary_rows,
    turn_similarities,
    word_prosody,
)


def _word(text: str, start: float, end: float, phones: int, energy: float, pitch: float | None) -> dict:
    return {
        "text": text,
        "start": start,
        "end": end,
        "phones": phones,
        "energy_db": energy,
        "pitch_semitones": pitch,
    }


# "the cart is red", read neutrally: 0.1 s per phone, 60 dB, 50 semitones each.
NEUTRAL = [
    _word("the", 0.0, 0.2, 2, 60.0, 50.0),
    _word("cart", 0.2, 0.5, 3, 60.0, 50.0),
    _word("is", 0.5, 0.7, 2, 60.0, 50.0),
    _word("red", 0.7, 1.0, 3, 60.0, 50.0),
]


def _faster_and_higher(reading: list[dict]) -> list[dict]:
    """The same reading at 1.3x the pace, 2 dB louder and 3 semitones higher throughout."""
    return [
        {
            **word,
            "start": word["start"] / 1.3,
            "end": word["end"] / 1.3,
            "energy_db": word["energy_db"] + 2.0,
            "pitch_semitones": None if word["pitch_semitones"] is None else word["pitch_semitones"] + 3.0,
        }
        for word in reading
    ]


def test_rate_is_the_ratio_of_phones_per_second_to_the_neutral_reading() -> None:
    assert rate_ratio({"phones_per_second": 13.0}, {"phones_per_second": 10.0}) == pytest.approx(1.3)
    assert rate_ratio({}, {"phones_per_second": 10.0}) is None
    # 1.31 x the neutral pace is past the 1.15 step: fast ("high"); the same pace is normal
    fast = prosody_levels({"phones_per_second": 13.1}, {"phones_per_second": 10.0})
    assert fast["rate"] == "high"
    assert prosody_levels({"phones_per_second": 10.0}, {"phones_per_second": 10.0})["rate"] == "normal"
    assert prosody_levels({"phones_per_second": 8.0}, {"phones_per_second": 10.0})["rate"] == "low"


def test_a_word_that_grew_louder_than_the_rest_is_heard_stressed() -> None:
    # everything 2 dB louder (the emotion), "cart" 5 dB: 3 dB past the median word's change
    reading = _faster_and_higher(NEUTRAL)
    reading[1] = {**reading[1], "energy_db": 65.0}
    assert stressed_against_neutral(reading, NEUTRAL) == ["cart"]
    # the same reading without the stressed word: a uniform change stresses nothing
    assert stressed_against_neutral(_faster_and_higher(NEUTRAL), NEUTRAL) == []


def test_longer_and_higher_together_is_stress_either_alone_is_not() -> None:
    # "red" 1.5x longer per phone than the rest and 3 semitones higher than the rest's change
    longer_higher = _faster_and_higher(NEUTRAL)
    red = longer_higher[3]
    longer_higher[3] = {
        **red,
        "end": red["start"] + 1.5 * (red["end"] - red["start"]),
        "pitch_semitones": 56.0,
    }
    assert stressed_against_neutral(longer_higher, NEUTRAL) == ["red"]
    only_longer = [*longer_higher[:3], {**longer_higher[3], "pitch_semitones": 53.0}]
    assert stressed_against_neutral(only_longer, NEUTRAL) == []


def test_readings_whose_words_differ_are_not_compared() -> None:
    assert stressed_against_neutral(NEUTRAL[:3], NEUTRAL) is None
    assert stressed_against_neutral([], []) is None


def test_agreement_with_the_asked_emphasis() -> None:
    assert emphasis_agreement("Cart", ["cart"]) == {"asked": "Cart", "detected": ["cart"], "agrees": True}
    assert emphasis_agreement("cart", ["red"])["agrees"] is False
    assert emphasis_agreement("", [])["agrees"] is True
    assert emphasis_agreement("", ["red"])["agrees"] is False
    assert emphasis_agreement("cart", None)["agrees"] is None


def test_word_prosody_reads_each_words_median_pitch_and_mean_power() -> None:
    times = np.array([0.05, 0.15, 0.25, 0.35])
    pitch = np.array([100.0, 200.0, np.nan, np.nan])
    intensity = np.array([60.0, 70.0, 60.0, 60.0])
    first, second = word_prosody([("a", 0.0, 0.2, 2), ("b", 0.2, 0.4, 2)], (times, pitch), (times, intensity))
    # median of 100 and 200 Hz is 150 Hz; the mean power of 60 and 70 dB is 10 log10((1e6 + 1e7) / 2)
    assert first["pitch_semitones"] == pytest.approx(round(12 * math.log2(150.0), 2))
    assert first["energy_db"] == pytest.approx(round(10 * math.log10(5.5e6), 2))
    assert (second["pitch_semitones"], second["energy_db"]) == (None, 60.0)


def test_each_turn_is_compared_with_the_mean_of_the_other_turns() -> None:
    same, turned = [1.0, 0.0], [0.0, 1.0]
    # turn 3 compared with the mean of two identical turns: cosine 0; turns 1 and 2 with the mean
    # of (1, 0) and (0, 1): cos 45 degrees
    similarities = turn_similarities([same, same, turned])
    assert similarities == [pytest.approx(0.7071, abs=1e-4), pytest.approx(0.7071, abs=1e-4), 0.0]
    assert turn_similarities([same, None]) == [None, None]


def test_the_build_summary_counts_levels_stress_pauses_and_speakers() -> None:
    summary = SpeechCheckSummary()
    summary.add(
        {
            "phones_per_second": 13.0,
            "rate_ratio": 1.3,
            "rate_level": "high",
            "stress": {"asked": "cart", "detected": ["cart"], "agrees": True},
            "pauses": {"count": 2, "longest_seconds": 0.5},
            "speaker_similarity": 0.9,
        },
        "D1",
    )
    summary.add(
        {
            "phones_per_second": 10.0,
            "rate_ratio": 1.0,
            "rate_level": "normal",
            "stress": {"asked": "", "detected": ["red"], "agrees": False},
            "pauses": {"count": 0, "longest_seconds": 0.0},
            "speaker_similarity": 0.6,
        },
        "D1",
    )
    summary.add({"rate_level": "", "stress": {"asked": "x", "detected": None, "agrees": None}})
    figures = summary.to_json()
    assert figures["rate_levels"] == {"high": 1, "normal": 1, "unmeasured": 1}
    assert (figures["mean_rate_ratio"], figures["mean_phones_per_second"]) == (1.15, 11.5)
    assert (figures["stress_found"], figures["stress_asked"]) == (1, 1)
    assert (figures["stress_unasked_clean"], figures["stress_unasked"], figures["stress_not_compared"]) == (
        0,
        1,
        1,
    )
    assert figures["stress_agreement"] == 0.5
    assert (figures["mean_pauses"], figures["mean_longest_pause_seconds"]) == (1.0, 0.25)
    assert (figures["dialogues_compared"], figures["mean_turn_speaker_similarity"]) == (1, 0.75)
    assert (figures["lowest_turn_speaker_similarity"], figures["turns_below_speaker_threshold"]) == (0.6, 1)
    rows = dict(summary_rows(figures))
    assert rows["Asked-for stress heard"] == "1 of 1"
    assert rows["Speaking rate (slow / normal / fast)"] == "0 / 1 / 1"
