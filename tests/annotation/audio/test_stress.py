"""Stressed-word candidates from duration, pitch and energy against the utterance, computed by hand."""

from __future__ import annotations

from annotation.audio.stress import StressCandidate, TimedWord, stress_candidates

# "the cart is very red": per phone 0.1 s except cart and red (0.2 s, twice the median word).
WORDS = [
    TimedWord("the", 0.0, 0.2, 2),
    TimedWord("cart", 0.2, 0.8, 3),
    TimedWord("is", 0.8, 1.0, 2),
    TimedWord("very", 1.0, 1.4, 4),
    TimedWord("red", 1.4, 2.0, 3),
]
FOUR_SEMITONES_UP = 200.0 * 2 ** (4 / 12)
# One pitch and one energy point in the middle of each word; red is unvoiced (no pitch).
PITCH = [(0.1, 200.0), (0.5, FOUR_SEMITONES_UP), (0.9, 200.0), (1.2, 200.0), (1.7, None)]
ENERGY = [(0.1, 60.0), (0.5, 60.0), (0.9, 60.0), (1.2, 61.0), (1.7, 69.0)]


def test_a_word_longer_and_higher_or_longer_and_louder_than_the_median_word_is_a_candidate() -> None:
    # cart: 2.0x the median 0.1 s per phone, (2.0 - 1) / 0.3 = 3.33 past the 1.3 ratio; its peak
    # 4 semitones above the median word's, 4 / 2 = 2.0. red: as long, no pitch, 69 - 60 = 9 dB
    # louder than the median word, 9 / 3 = 3.0.
    assert stress_candidates(WORDS, PITCH, ENERGY) == [
        StressCandidate(1, "cart", ("longer", "higher"), 5.33),
        StressCandidate(4, "red", ("longer", "louder"), 6.33),
    ]


def test_one_cue_alone_is_not_enough() -> None:
    # red said at the common pace: only louder is left.
    words = [*WORDS[:4], TimedWord("red", 1.4, 1.7, 3)]

    assert [candidate.text for candidate in stress_candidates(words, PITCH, ENERGY)] == ["cart"]


def test_duration_counts_per_phone_so_a_long_word_is_not_a_stressed_one() -> None:
    # "strengths" takes 0.8 s but has 8 phones: 0.1 s each, the common pace, though 9 dB louder.
    words = [*WORDS[:4], TimedWord("strengths", 1.4, 2.2, 8)]
    energy = [*ENERGY[:4], (1.8, 69.0)]
    pitch = [*PITCH[:4], (1.8, FOUR_SEMITONES_UP)]

    candidates = stress_candidates(words, pitch, energy)

    assert [candidate.text for candidate in candidates] == ["cart", "strengths"]
    assert candidates[1].cues == ("higher", "louder")


def test_too_few_words_or_no_tracks_suggest_nothing() -> None:
    assert stress_candidates(WORDS[:2], PITCH, ENERGY) == []
    # Without contours only duration is left: one cue, never a candidate.
    assert stress_candidates(WORDS, [], []) == []
