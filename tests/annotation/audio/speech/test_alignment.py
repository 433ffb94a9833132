"""Forced alignment against eSpeak NG's own word times; the script check on a substituted word and on
a wrong sentence in babble."""

from __future__ import annotations

import difflib

import numpy as np
import pytest

from annotation.audio import rooms
from annotation.audio.speech.alignment import (
    SPEECH_LIKE_LOOP_SCORE,
    SPEECH_LIKE_TAKE_GOODNESS,
    TAKE_GOODNESS,
    AlignedWord,
    Alignment,
    align,
    check_script,
    script_words,
)
from annotation.audio.speech.rate import articulation_rate
from tests.annotation.audio.speech.espeak import RATE, SENTENCES, spoken

VOICES = ("en-us", "en-gb", "en-us+f3")


def test_script_words_are_the_dictionary_spelling() -> None:
    assert script_words("Don't go, Stella!") == ["don't", "go", "stella"]


@pytest.mark.parametrize("voice", VOICES)
def test_word_starts_are_within_30_ms_median_of_the_truth(voice: str) -> None:
    errors: list[float] = []
    for text in SENTENCES:
        samples, speech = spoken(text, voice=voice)
        alignment = align(samples, text)
        assert [w.text for w in alignment.words] == script_words(text)
        # eSpeak reports a few short words with their neighbour ("from the"): pair words by text.
        truth = [(w.text.lower(), w.start) for w in speech.words]
        pairs = difflib.SequenceMatcher(a=[w.text for w in alignment.words], b=[t for t, _ in truth])
        for block in pairs.get_matching_blocks():
            for offset in range(block.size):
                errors.append(abs(alignment.words[block.a + offset].start - truth[block.b + offset][1]))
        assert len(errors) >= 0.8 * len(script_words(text))
    assert float(np.median(errors)) < 0.030


def test_the_right_script_matches() -> None:
    samples, _ = spoken(SENTENCES[0])
    assert check_script(align(samples, SENTENCES[0])).verdict == "matches"


def test_a_one_word_substitution_is_flagged_and_named() -> None:
    samples, _ = spoken(SENTENCES[0])
    check = check_script(align(samples, SENTENCES[0].replace("dog", "cat")))
    assert check.verdict == "doubtful"
    assert check.doubtful_words == ("cat",)
    assert "'cat'" in check.reason


def test_most_substitutions_are_the_weakest_word_across_voices() -> None:
    # Measured: the substituted word is the weakest word in 7 of these 9 (two failed to align at
    # all, which reads "does not match"). The gate is looser than the measure, never looser than 2/3.
    found = 0
    for voice in VOICES:
        for text, (right, wrong) in zip(
            SENTENCES, (("dog", "cat"), ("store", "shop"), ("cold", "warm")), strict=True
        ):
            samples, _ = spoken(text, voice=voice)
            check = check_script(align(samples, text.replace(right, wrong)))
            found += check.weakest_word == wrong or check.verdict == "does_not_match"
    assert found >= 6


def test_phones_per_second_follow_the_speaking_rate_within_5_percent() -> None:
    # eSpeak's truth: the same phones in less time; the rate ratio is the ratio of speaking time
    # (the time between each word's start and the next word's, the last word to its last phoneme).
    text = SENTENCES[1]
    normal, normal_speech = spoken(text, rate_wpm=150)
    fast, fast_speech = spoken(text, rate_wpm=220)
    measured = articulation_rate(align(fast, text)) / articulation_rate(align(normal, text))  # type: ignore[operator]
    true = normal_speech.duration_seconds / fast_speech.duration_seconds
    assert measured == pytest.approx(true, rel=0.05)


def test_a_long_pause_does_not_lower_phones_per_second() -> None:
    plain, _ = spoken("I know what you mean. Tell me more about it.")
    paused, _ = spoken('I know what you mean. <break time="1500ms"/> Tell me more about it.', ssml=True)
    rate_plain = articulation_rate(align(plain, "I know what you mean. Tell me more about it."))
    rate_paused = articulation_rate(align(paused, "I know what you mean. Tell me more about it."))
    assert rate_paused == pytest.approx(rate_plain, rel=0.08)


def test_a_take_reading_another_sentence_does_not_match_either_way_round() -> None:
    # issue 39: scored against the take's own median word, every word wrong read "matches"
    long_take, _ = spoken(SENTENCES[0])
    short_take, _ = spoken("The office is closed today.")

    assert check_script(align(long_take, "The office is closed today.")).verdict == "does_not_match"
    assert check_script(align(short_take, SENTENCES[0])).verdict == "does_not_match"


@pytest.mark.parametrize("delivery", [{"voice": "en-us+whisper"}, {"rate_wpm": 270}, {"pitch": 5}])
def test_expressive_readings_of_the_right_script_match(delivery: dict[str, object]) -> None:
    samples, _ = spoken(SENTENCES[2], **delivery)
    check = check_script(align(samples, SENTENCES[2]))
    assert check.verdict == "matches", check


def test_below_the_snr_it_holds_at_the_check_is_too_noisy_not_a_mismatch() -> None:
    samples, _ = spoken(SENTENCES[1])
    alignment = align(samples, "The office is closed today.")

    check = check_script(alignment, snr_db=1.6)

    assert check.verdict == "too_noisy"
    assert check.reason == (
        "Too noisy to check the script: the speech is 2 dB above the noise, the check needs 5 dB."
    )


def test_in_babble_a_wrong_sentence_does_not_match_and_the_right_one_does() -> None:
    # given a low-pitched reading of a short line in 10 dB of babble (five other voices at once)
    samples, _ = spoken("The office is closed today", pitch=5)
    pad = np.zeros(RATE // 2)
    take = np.concatenate([pad, samples, pad])
    take = rooms.mixed(take, rooms.babble(len(take) / RATE + 0.1, seed=40), 10.0)

    # then a longer wrong sentence, which can borrow the babble's sounds, does not match
    wrong = align(take, "My brother lost his keys on the way home from work")
    assert check_script(wrong, snr_db=10.0).verdict == "does_not_match"
    assert check_script(align(take, "The office is closed today"), snr_db=10.0).verdict == "matches"


def test_in_speech_like_noise_a_take_must_clear_the_stricter_line() -> None:
    # A wrong sentence in babble scored -32 to -41 against the free loop, inside the -42 line.
    words = tuple(
        AlignedWord(text, 0.0, 0.3, -40.0, (), goodness=-35.0) for text in ("brother", "lost", "keys", "home")
    )
    between = (SPEECH_LIKE_TAKE_GOODNESS + TAKE_GOODNESS) / 2

    def verdict(loop_score: float) -> str:
        alignment = Alignment(words, (), False, goodness=between, coverage=0.9, loop_score=loop_score)
        return check_script(alignment, snr_db=10.0).verdict

    assert verdict(SPEECH_LIKE_LOOP_SCORE - 5) == "does_not_match"  # babble: the loop scores poorly too
    assert verdict(SPEECH_LIKE_LOOP_SCORE + 8) == "matches"  # a fan or white noise
