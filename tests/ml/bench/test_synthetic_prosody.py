"""The synthetic prosody task: emotion in prosody only, held-out voices, a cache, a gold the scorer rewards."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ml.core.synthetic.prosody import (
    EMOTIONS,
    GOLD,
    TEST_SPEAKERS,
    TRAIN_SPEAKERS,
    ProsodyTask,
    build_task,
)
from ml.core.synthetic.rl_probe import synthetic_stage_scorer
from ml.core.synthetic.sft_probe import heard_emotion
from webapp.lib.output_format import format_reward, parse_output


def test_test_speakers_are_held_out_and_every_split_is_balanced(small_task: ProsodyTask) -> None:
    train_voices = {speaker.voice for speaker in TRAIN_SPEAKERS}
    assert not train_voices & {speaker.voice for speaker in TEST_SPEAKERS}
    assert {u.speaker for u in small_task.test} == {speaker.name for speaker in TEST_SPEAKERS}
    for split in (small_task.train, small_task.test):
        counts = [sum(u.emotion == emotion for u in split) for emotion in EMOTIONS]
        assert len(set(counts)) == 1
    assert small_task.chance == 1 / len(EMOTIONS)


def test_the_prosody_carries_the_emotion(small_task: ProsodyTask) -> None:
    def mean_of(emotion: str, measure: str) -> float:
        clips = [u.audio for u in small_task.train if u.emotion == emotion]
        values = [np.sqrt(np.mean(clip**2)) if measure == "energy" else len(clip) for clip in clips]
        return float(np.mean(values))

    assert mean_of("sad", "energy") < mean_of("neutral", "energy") < mean_of("angry", "energy")
    assert mean_of("sad", "length") > mean_of("neutral", "length") > mean_of("angry", "length")
    # The words are the same neutral sentences whatever the emotion.
    sentences = {
        emotion: {u.sentence for u in small_task.train if u.emotion == emotion} for emotion in EMOTIONS
    }
    assert all(text.rstrip(".").split() for texts in sentences.values() for text in texts)
    assert all(u.audio.dtype == np.float32 and np.abs(u.audio).max() <= 1.0 for u in small_task.train)


def test_a_second_build_reads_the_same_audio_from_the_cache(tmp_path: Path) -> None:
    first = build_task(takes_train=1, takes_test=1, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("task-*.npz")
    second = build_task(takes_train=1, takes_test=1, cache_dir=tmp_path)
    assert [u.item_id for u in second.train] == [u.item_id for u in first.train]
    assert all(np.array_equal(a.audio, b.audio) for a, b in zip(first.test, second.test, strict=True))
    assert list(tmp_path.glob("task-*.npz")) == [cached]


def test_the_gold_output_scores_full_marks_and_a_wrong_emotion_loses_perception(
    small_task: ProsodyTask,
) -> None:
    scorer = synthetic_stage_scorer(small_task.test)
    utterance = small_task.test[0]
    gold = parse_output(utterance.gold.output())
    assert format_reward(gold) == 1.0
    assert heard_emotion(gold.span_text("perception")) == utterance.emotion
    scores = scorer(utterance.item_id, gold)
    assert (scores.perception, scores.reasoning, scores.strategy, scores.content, scores.audio_alignment) == (
        1.0,
        1.0,
        1.0,
        5.0,
        1.0,
    )
    other = next(emotion for emotion in EMOTIONS if GOLD[emotion].speech_style != utterance.gold.speech_style)
    wrong = scorer(utterance.item_id, parse_output(GOLD[other].output()))
    assert wrong.perception == 0.0
    assert wrong.audio_alignment == 0.0
    assert wrong.content < 5.0
    assert scorer(utterance.item_id, parse_output("")).perception == 0.0
