"""The same eSpeak voice scores above another voice."""

from __future__ import annotations

from annotation.audio.speech.speaker import similarity, similarity_to, speaker_embedding
from tests.annotation.audio.speech.espeak import SENTENCES, spoken


def test_the_same_voice_scores_above_another_voice() -> None:
    voice_a = [speaker_embedding(spoken(text, voice="en-us")[0]) for text in SENTENCES]
    other = speaker_embedding(spoken(SENTENCES[0], voice="en-us+f3", pitch=70)[0])
    same = similarity(voice_a[0], voice_a[1])
    assert same > similarity(voice_a[0], other) + 0.05
    assert similarity_to(voice_a[2], voice_a[:2]) > similarity_to(other, voice_a[:2])  # type: ignore[operator]
    assert similarity_to(other, []) is None
    assert len(voice_a[0]) == 256
