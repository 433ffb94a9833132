"""Forced alignment against eSpeak NG's own word times; the script check on a substituted word and on
a wrong sentence in babble."""

from __future__ import annotations

import difflib
import math

import numpy as np
import pytest

from annotation.audio import rooms
from annotation.audio.speech import alignment as alignment_module
from annotation.audio.speech.alignment import (
    MIN_ORDER_CONTRAST,
    SPEECH_LIKE_LOOP_SCORE,
    SPEECH_LIKE_TAKE_GOODNESS,
    TAKE_GOODNESS,
    WARPS,
    AlignedWord,
    Alignment,
    ScriptLimits,
    align,
    check_script,
    checked_script,
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
    # Measured: the substituted word is the weakest word (function words are never named) or the
    # take does not match in 7-8 of these 9 (eSpeak NG's reading differs a little with what the
    # process synthesised before). The gate is looser than the measure, never looser than 2/3.
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


@pytest.mark.parametrize("delivery", rooms.DELIVERIES)
def test_made_expressive_deliveries_match_their_script_and_not_another(delivery: str) -> None:
    # Shouted into clipping, child-like, elderly-like with a tremolo, whisper-like, crying, angry
    # (`rooms.delivered`).
    samples = rooms.delivered(spoken(SENTENCES[2])[0], delivery, seed=1)
    assert checked_script(samples, SENTENCES[2])[1].verdict == "matches"
    assert checked_script(samples, "My brother lost his keys on the way home from work")[1].verdict == (
        "does_not_match"
    )


def test_below_the_snr_it_holds_at_the_check_is_too_noisy_not_a_mismatch() -> None:
    samples, _ = spoken(SENTENCES[1])
    alignment = align(samples, "The office is closed today.")

    check = check_script(alignment, snr_db=1.6)

    assert check.verdict == "too_noisy"
    assert check.reason == (
        "Too noisy to check the script: the speech is 2 dB above the noise, the check needs 5 dB."
    )


def test_in_babble_a_longer_wrong_sentence_does_not_match() -> None:
    # given a low-pitched reading of a short line in 10 dB of babble (five other voices at once)
    samples, _ = spoken("The office is closed today", pitch=5)
    pad = np.zeros(RATE // 2)
    take = np.concatenate([pad, samples, pad])
    # (seed 40's babble read -4 to -14 on the free loop, with what eSpeak NG had read before: not
    # always speech-like; this one reads -13 to -17, and the wrong sentence -40 to -50)
    take = rooms.mixed(take, rooms.babble(len(take) / RATE + 0.1, seed=41), 10.0)

    # then a longer wrong sentence, which can borrow the babble's sounds, does not match
    wrong = align(take, "My brother lost his keys on the way home from work")
    assert wrong.loop_score is not None and wrong.loop_score < SPEECH_LIKE_LOOP_SCORE
    assert check_script(wrong, snr_db=10.0).verdict == "does_not_match"
    # (this low-pitched reading's own script fits it only a little better than its words reversed,
    # -1.3: one of the 3.9% of right takes of the tuning split the limits flag; a right take in
    # babble that matches: the next test)


def test_in_speech_like_noise_a_take_must_clear_the_stricter_line() -> None:
    # A wrong sentence in babble scored -32 to -41 against the free loop, inside the -45 line.
    words = tuple(
        AlignedWord(text, 0.0, 0.3, -40.0, (), goodness=-35.0) for text in ("brother", "lost", "keys", "home")
    )
    between = (SPEECH_LIKE_TAKE_GOODNESS + TAKE_GOODNESS) / 2

    def verdict(loop_score: float) -> str:
        alignment = Alignment(words, (), False, goodness=between, coverage=0.9, loop_score=loop_score)
        return check_script(alignment, snr_db=10.0).verdict

    assert verdict(SPEECH_LIKE_LOOP_SCORE - 5) == "does_not_match"  # babble: the loop scores poorly too
    assert verdict(SPEECH_LIKE_LOOP_SCORE + 8) == "matches"  # a fan or white noise


def in_room(samples: np.ndarray, noise: str, snr_db: float, seed: int) -> np.ndarray:
    """Return `samples` with 0.5 s of room either side, mixed into `noise` at `snr_db`."""
    pad = np.zeros(RATE // 2)
    take = np.concatenate([pad, samples, pad])
    return rooms.mixed(take, rooms.NOISES[noise](len(take) / RATE + 0.1, seed=seed), snr_db)


def test_a_short_take_in_babble_is_not_flagged_for_the_voices_around_it() -> None:
    # issue 39: around real card names (1-2 s) the free loop heard the babble in the room before
    # and after as speech a three-word script cannot cover (coverage 0.29-0.56: flagged)
    samples, _ = spoken("Go back home")
    take = in_room(samples, "babble", 10.0, seed=8)

    right = align(take, "Go back home")
    assert right.heard_coverage is not None and right.heard_coverage > 0.9
    assert check_script(right, snr_db=10.0).verdict == "matches", right
    # and a wrong short sentence in the same room is still flagged: the loop scores poorly in
    # babble, so the take must clear the stricter line, which it misses (-44 against -38)
    wrong = check_script(align(take, "Turn the lights off"), snr_db=10.0)
    assert wrong.verdict == "does_not_match"


def test_heard_coverage_counts_only_speech_over_the_noise_in_speech_like_noise() -> None:
    words = (AlignedWord("home", 0.0, 0.3, -40.0, (), goodness=-20.0),)

    def verdict(coverage: float, heard: float | None) -> str:
        alignment = Alignment(
            words,
            (),
            False,
            goodness=-20.0,
            coverage=coverage,
            loop_score=SPEECH_LIKE_LOOP_SCORE - 5,
            heard_coverage=heard,
        )
        return check_script(alignment, snr_db=10.0).verdict

    assert verdict(0.4, 0.95) == "matches"  # the babble around it is not the actor's speech
    assert verdict(0.4, 0.5) == "does_not_match"  # half the speech over the noise is not the script
    assert verdict(0.4, None) == "does_not_match"  # unmeasured: the coverage of all the loop hears


def test_a_take_with_no_path_at_the_default_beams_is_aligned_again_with_wider_ones() -> None:
    # A child-like reading (formants 25% up): the default beams find no path through its own
    # script; the wide-beam retry does, and a wrong sentence still scores far below the loop.
    samples = rooms.delivered(spoken(SENTENCES[1], pitch=80)[0], "child-like")

    right = align(samples, SENTENCES[1])
    assert right.retried and not right.failed
    assert [word.text for word in right.words] == script_words(SENTENCES[1])
    wrong = align(samples, SENTENCES[2])
    assert check_script(wrong).verdict == "does_not_match"


def test_a_flagged_take_is_checked_again_under_a_vocal_tract_warp(monkeypatch: pytest.MonkeyPatch) -> None:
    words = tuple(AlignedWord(text, 0.0, 0.3, -40.0, (), goodness=-20.0) for text in ("ten", "clubs"))
    adult = Alignment(words, (), False, goodness=TAKE_GOODNESS - 8, coverage=0.9, loop_score=2.0)
    warped = Alignment(
        words, (), False, goodness=TAKE_GOODNESS + 15, coverage=0.9, loop_score=3.0, warp=WARPS[0]
    )
    calls: list[float | None] = []

    def aligned(samples: object, script: str, *, warp: float | None = None) -> Alignment:
        calls.append(warp)
        return adult if warp is None else warped

    monkeypatch.setattr(alignment_module, "align", aligned)
    alignment, check = checked_script(np.zeros(RATE), "ten of clubs", snr_db=10.0)
    assert (check.verdict, alignment.warp, calls) == ("matches", WARPS[0], [None, *WARPS])

    # a take that matches at once is aligned once; a warp that scores no better changes nothing
    calls.clear()
    adult = warped
    assert checked_script(np.zeros(RATE), "ten of clubs", snr_db=10.0)[1].verdict == "matches"
    assert calls == [None]
    adult = warped = Alignment(words, (), False, goodness=TAKE_GOODNESS - 8, coverage=0.9, loop_score=2.0)
    assert checked_script(np.zeros(RATE), "ten of clubs", snr_db=10.0)[0].warp is None


def test_a_child_like_voice_in_a_fan_matches_its_script_and_not_another() -> None:
    # A child-like reading (formants 25% up) in a fan scores -35 to -40 against the loop (eSpeak's
    # reading differs a little with what the process synthesised before), inside the take line; a
    # wrong sentence finds no path, warped or not.
    samples = rooms.delivered(spoken(SENTENCES[0], pitch=80)[0], "child-like")
    take = in_room(samples, "fan", 10.0, seed=3)

    assert checked_script(take, SENTENCES[0], snr_db=10.0)[1].verdict == "matches"
    wrong = align(take, SENTENCES[2], warp=WARPS[0])
    assert wrong.failed or (wrong.goodness is not None and wrong.goodness < TAKE_GOODNESS)
    assert checked_script(take, SENTENCES[2], snr_db=10.0)[1].verdict == "does_not_match"


def test_a_warped_alignment_reads_the_same_after_an_unwarped_one() -> None:
    # pocketsphinx keeps the frequency warp's parameters in process globals that a rebuilt front
    # end takes up: a warped decoder rebuilt after an unwarped one scored unwarped.
    take = in_room(spoken(SENTENCES[1], pitch=80)[0], "fan", 10.0, seed=3)
    warped = align(take, SENTENCES[1], warp=WARPS[0])
    unwarped = align(in_room(spoken(SENTENCES[2])[0], "white", 10.0, seed=4), SENTENCES[2])

    assert align(take, SENTENCES[1], warp=WARPS[0]) == warped
    assert align(take, SENTENCES[1]).goodness != warped.goodness != unwarped.goodness


def test_a_take_reads_the_same_whatever_the_process_checked_before() -> None:
    # pocketsphinx's noise removal kept its noise estimate from take to take: a take in babble read
    # -11.4 checked first and -6.9 after a take in white noise, so a verdict near a line depended
    # on the order of the takes (issue 39; a full-suite CI failure).
    take = in_room(spoken(SENTENCES[1])[0], "babble", 10.0, seed=5)
    first = checked_script(take, SENTENCES[1], snr_db=10.0)

    for noise, snr_db in (("white", 0.0), ("fan", 10.0)):
        other = in_room(spoken(SENTENCES[2], pitch=80)[0], noise, snr_db, seed=6)
        checked_script(other, SENTENCES[0])  # another script: the warped decoders run too

    assert checked_script(take, SENTENCES[1], snr_db=10.0) == first
    assert checked_script(take, SENTENCES[2], snr_db=10.0)[1].verdict == "does_not_match"


def test_a_take_fitting_its_words_reversed_about_as_well_does_not_match() -> None:
    # A wrong sentence in babble can score near the free loop (it borrows the other voices' sounds)
    # but fits the script in its order no better than the same words reversed (issue 39).
    words = tuple(AlignedWord(text, 0.0, 0.3, -40.0, (), goodness=-5.0) for text in ("brother", "keys"))
    line = 1.0

    def verdict(contrast: float | None) -> str:
        alignment = Alignment(
            words, (), False, goodness=-5.0, coverage=0.95, loop_score=0.0, order_contrast=contrast
        )
        return check_script(alignment, snr_db=30.0, limits=ScriptLimits(min_order_contrast=line)).verdict

    assert verdict(line - 0.5) == "does_not_match"
    assert verdict(line + 20.0) == "matches"
    assert verdict(math.inf) == "matches"  # the reversed words found no path at all
    assert verdict(None) == "matches"  # not measurable (one word, a palindrome): no say


def test_the_word_order_contrast_reads_the_script_in_its_order() -> None:
    samples, _ = spoken(SENTENCES[0])
    right = align(samples, SENTENCES[0])
    assert right.order_contrast is not None and right.order_contrast > 5.0

    # unmeasurable: one word, or words that read the same reversed ("five five")
    assert align(samples, "quick").order_contrast is None
    assert align(samples, "five five").order_contrast is None
    assert align(samples, SENTENCES[0], scored=False).order_contrast is None


def test_in_babble_a_wrong_sentence_near_the_loop_is_caught_by_its_word_order() -> None:
    # A slow reading of a short line in 10 dB of babble: the long wrong sentence borrows the other
    # voices' sounds and clears every line but the word order's (-5.8 against 11.5 for the script)
    samples, _ = spoken("The office is closed today", rate_wpm=105)
    take = in_room(samples, "babble", 10.0, seed=35)

    wrong = align(take, "My brother lost his keys on the way home from work")
    assert wrong.goodness is not None and wrong.goodness > SPEECH_LIKE_TAKE_GOODNESS
    without_order = ScriptLimits(min_order_contrast=-math.inf)
    assert check_script(wrong, snr_db=10.0, limits=without_order).verdict == "matches"
    assert wrong.order_contrast is not None and wrong.order_contrast < MIN_ORDER_CONTRAST
    assert checked_script(take, "My brother lost his keys on the way home from work", 10.0)[1].verdict == (
        "does_not_match"
    )
    right = align(take, "The office is closed today")
    assert right.order_contrast is not None and right.order_contrast > MIN_ORDER_CONTRAST + 5
    assert checked_script(take, "The office is closed today", 10.0)[1].verdict == "matches"
