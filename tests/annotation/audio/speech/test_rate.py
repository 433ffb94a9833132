"""The one speaking-rate rule: articulation rate from forced alignment, pauses left out (issue 42)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio.acoustics import count_words, frame_levels_dbfs, non_silent_frames
from annotation.audio.speech.rate import measure_articulation_rate
from annotation.audio.synthesis import SynthesizedSpeech, synthesize

SENTENCE = "The little boat drifted slowly across the quiet lake toward the harbour lights."
# The same words with two long breaks inside the sentence (SSML, as the builder reads its scripts).
PAUSED = (
    '<speak>The little boat drifted slowly <break time="800ms"/> across the quiet lake '
    '<break time="800ms"/> toward the harbour lights.</speak>'
)
VOICES = ("en-us", "en-gb", "en-us+f3")


def rate_of(speech: SynthesizedSpeech) -> float:
    rate = measure_articulation_rate(speech.samples.astype(np.float64) / 32768, speech.sample_rate, SENTENCE)
    assert rate is not None
    return rate


def words_over_sounding_span(speech: SynthesizedSpeech) -> float:
    """The rule the workbench drafted before issue 42: words over the first-to-last-sound span."""
    levels = frame_levels_dbfs(speech.samples.astype(np.float64) / 32768, speech.sample_rate)
    sounding = np.flatnonzero(non_silent_frames(levels))
    return count_words(SENTENCE) / ((sounding[-1] - sounding[0] + 1) * 0.01)


@pytest.mark.parametrize("voice", VOICES)
def test_internal_pauses_leave_the_rate_at_the_same_level(voice: str) -> None:
    plain = synthesize(f"<speak>{SENTENCE}</speak>", rate_wpm=170, voice=voice, ssml=True)
    paused = synthesize(PAUSED, rate_wpm=170, voice=voice, ssml=True)
    # The pauses are really there: the paused reading lasts over a second longer...
    assert len(paused.samples) - len(plain.samples) > 1.2 * plain.sample_rate
    # ...which the old rule read as much slower speech...
    assert words_over_sounding_span(paused) < 0.85 * words_over_sounding_span(plain)
    # ...and articulation rate, over speech only, does not.
    assert rate_of(paused) == pytest.approx(rate_of(plain), rel=0.10)


def test_silence_spliced_between_words_leaves_the_rate_at_the_same_level() -> None:
    first, second = "The little boat drifted slowly.", "Across the quiet lake toward the harbour lights."
    one, two = synthesize(first, rate_wpm=170), synthesize(second, rate_wpm=170)
    whole = synthesize(f"{first} {second}", rate_wpm=170)
    spliced = np.concatenate([one.samples, np.zeros(one.sample_rate, dtype=np.int16), two.samples])

    spliced_rate = measure_articulation_rate(spliced.astype(np.float64) / 32768, one.sample_rate, SENTENCE)

    assert spliced_rate == pytest.approx(rate_of(whole), rel=0.10)


def test_a_fast_reading_measures_faster_than_a_slow_one() -> None:
    slow, fast = synthesize(SENTENCE, rate_wpm=130), synthesize(SENTENCE, rate_wpm=260)

    assert rate_of(fast) > 1.4 * rate_of(slow)


def test_no_script_or_no_speech_has_no_rate() -> None:
    speech = synthesize(SENTENCE)
    assert (
        measure_articulation_rate(speech.samples.astype(np.float64) / 32768, speech.sample_rate, "  ") is None
    )
    assert measure_articulation_rate(np.zeros(16_000), 16_000, SENTENCE) is None
