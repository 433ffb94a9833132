"""The builder's default voices speak as their names say, measured on real eSpeak NG output."""

from __future__ import annotations

from annotation.audio.acoustics import analyze
from annotation.audio.synthesis import synthesize
from ml.builder.config import BuildConfig

LINE = "The results came back this morning and nobody expected them."


def median_f0(voice: str) -> float:
    speech = synthesize(LINE, voice=voice)
    median = analyze(speech.samples, speech.sample_rate).median_f0_hz
    assert median is not None, voice
    return median


def test_every_default_female_voice_speaks_well_above_every_male_one() -> None:
    # eSpeak NG takes a "+variant" only with a voice name; "en-gb" is a language code (British
    # English is the voice file gmw/en), so the default "en-gb+f2" spoke as the male en-gb (about
    # 97 Hz) until the synthesis resolved the code to its voice before adding the variant.
    voices = BuildConfig(endpoints=()).voices
    medians = {voice: median_f0(voice) for voice in voices}
    female = [hz for voice, hz in medians.items() if "+f" in voice]
    male = [hz for voice, hz in medians.items() if "+f" not in voice]
    assert "en-gb+f2" in medians and female and male
    assert min(female) > 1.5 * max(male), medians  # measured: 186-199 Hz against 96-99 Hz
