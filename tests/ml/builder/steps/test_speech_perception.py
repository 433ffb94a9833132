"""Automatic perception through the consistency and perception steps, on eSpeak NG speech: the
speaking rate against the same text read neutrally by the same voice, the stress heard against the
emphasis asked for, and a dialogue's speaker consistency."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.audio.synthesis import ssml_markup, synthesize, to_wav_bytes
from ml.builder.config import BuildConfig
from ml.builder.logic.voicing import NEUTRAL_PITCH, NEUTRAL_RATE_WPM
from ml.builder.models import BuildDialogue, BuildSample
from ml.builder.steps.audio_steps import AudioStepContext, consistency, perception
from webapp.storage import new_media_key, save_media

CONTEXT = AudioStepContext(
    BuildConfig.from_json({"endpoints": [{"base_url": "http://llm/v1", "model": "m"}]})
)
SHORT_WORDS = "I got up at six and ran to the bus but it had gone."
LONG_WORDS = "Unfortunately the administrative reorganisation considerably complicated everything."
FASTER = round(NEUTRAL_RATE_WPM * 1.31)  # 223 words per minute


def _voiced(
    pk: int,
    text: str,
    rate_wpm: int = NEUTRAL_RATE_WPM,
    stressed_word: str = "",
    voice: str = "en-gb",
    **extra: object,
) -> BuildSample:
    """A user turn read by eSpeak NG at `rate_wpm`, stored as the user audio stage stores it."""
    markup, stressed = ssml_markup(text, stressed_word)
    speech = synthesize(markup, rate_wpm=rate_wpm, pitch=NEUTRAL_PITCH, voice=voice, ssml=True)
    return BuildSample(
        pk=pk,
        text=text,
        emotion="neutral",
        intensity="medium",
        stressed_word=stressed_word,
        voice={"voice": voice, "emphasis": stressed_word if stressed else ""},
        user_audio_key=save_media(
            new_media_key("builder", "wav"), to_wav_bytes(speech.samples, speech.sample_rate)
        ),
        topic_path="Daily life / Transport",
        **extra,
    )


def _perceived(samples: list[BuildSample]) -> list[dict]:
    """Run the consistency stage (which reads each text neutrally too) and then perception."""
    for sample, result in zip(samples, consistency(samples, CONTEXT), strict=True):
        for name, value in result.fields.items():
            setattr(sample, name, value)
    return [
        {**result.fields["speech"], "labels": result.fields["perception"]}
        for result in perception(samples, CONTEXT)
    ]


def test_a_reading_31_percent_faster_is_fast_and_a_neutral_one_normal_whatever_its_words(
    media_root: Path,
) -> None:
    # given each text read at the neutral pace and 31% faster by the same voice
    readings = [
        _voiced(1, SHORT_WORDS),
        _voiced(2, LONG_WORDS),
        _voiced(3, SHORT_WORDS, FASTER),
        _voiced(4, LONG_WORDS, FASTER),
    ]
    # when perception compares each with the same text read neutrally
    short, long, short_fast, long_fast = _perceived(readings)
    # then the neutral readings are normal and the faster ones fast, short words or long
    assert [reading["labels"]["rate"] for reading in (short, long, short_fast, long_fast)] == [
        "normal",
        "normal",
        "high",
        "high",
    ]
    assert 0.97 < short["rate_ratio"] < 1.03 and 0.97 < long["rate_ratio"] < 1.03
    assert 1.2 < short_fast["rate_ratio"] < 1.45 and 1.2 < long_fast["rate_ratio"] < 1.45
    # the rate is phones per second of speech (pauses excluded), read the same way for both texts;
    # eSpeak NG's two syntheses of one text differ slightly where speech starts and ends (the VAD
    # edge), so "the same" is within the 3% the ratio allows, not to the last digit
    assert short["phones_per_second"] == pytest.approx(short["neutral_phones_per_second"], rel=0.03)
    assert short_fast["labels"]["prosody_caption"].startswith("Fast")


def test_the_stress_asked_for_is_heard_and_labelled_and_none_is_heard_where_none_was_asked(
    media_root: Path,
) -> None:
    stressed, plain = _perceived(
        [
            _voiced(1, "I waited all day and nobody came.", stressed_word="nobody"),
            _voiced(2, "I waited all day and nobody came."),
        ]
    )
    assert stressed["stress"] == {"asked": "nobody", "detected": ["nobody"], "agrees": True}
    assert stressed["labels"]["stressed_words"] == ["nobody"]
    assert plain["stress"] == {"asked": "", "detected": [], "agrees": True}
    assert plain["labels"]["stressed_words"] == []


def test_a_dialogue_turn_in_another_voice_is_the_least_like_the_others(media_root: Path) -> None:
    # given a four-turn dialogue whose third turn another voice reads
    dialogue = BuildDialogue(pk=1, voice={"voice": "en-gb"})
    lines = (
        "I keep thinking about the interview tomorrow morning.",
        "What if they ask me about the gap in my career?",
        "I have prepared answers but my mind goes blank.",
        "Maybe I should practise out loud with a friend tonight.",
    )
    turns = [
        _voiced(n, text, voice="en-us+f3" if n == 3 else "en-gb", dialogue=dialogue, turn=n)
        for n, text in enumerate(lines, start=1)
    ]
    # when perception runs on the dialogue (one unit, as the stage claims it)
    similarities = [speech["speaker_similarity"] for speech in _perceived(turns)]
    # then every turn is compared with its other turns, and the other voice is the least alike
    assert all(isinstance(similarity, float) for similarity in similarities)
    assert min(similarities) == similarities[2]
    assert similarities[2] < min(similarities[:2] + similarities[3:]) - 0.05
