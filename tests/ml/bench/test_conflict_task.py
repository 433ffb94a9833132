"""The conflict task: the words mislead at test, the voice carries both cues, stage errors are independent."""

from __future__ import annotations

import itertools

import numpy as np

from ml.core.synthetic.conflict import (
    EMOTIONS,
    LEXICON,
    RATE,
    SAMPLE_RATE,
    URGENCIES,
    VOICE,
    ConflictItem,
    build_conflict_task,
    gold_for,
)
from ml.core.synthetic.prosody import Gold
from ml.core.synthetic.rl_probe import synthetic_stage_scorer
from webapp.lib.output_format import parse_output


def test_every_test_item_conflicts_and_the_training_correlation_flips() -> None:
    task = build_conflict_task(train_size=400, test_size=48, train_agreement=0.75, seed=3)
    agreement = np.mean([not item.conflict for item in task.train])
    assert 0.68 < agreement < 0.82  # far above the 0.25 of words chosen at random
    assert all(item.conflict for item in task.test)
    # The words never name the spoken emotion at test, and the voice's cues are balanced.
    assert all(item.words not in _lexicon_of(item.emotion) for item in task.test)
    for split in (task.train, task.test):
        for emotion, urgency in itertools.product(EMOTIONS, URGENCIES):
            assert sum(i.emotion == emotion and i.urgency == urgency for i in split) == len(split) // 8
    assert task.test[0].words in task.test[0].prompt


def _lexicon_of(emotion: str) -> tuple[str, ...]:
    return LEXICON[emotion]


def _pitch(audio: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(audio * np.hanning(audio.size)))
    return float(np.fft.rfftfreq(audio.size, 1 / SAMPLE_RATE)[np.argmax(spectrum)])


def _envelope_rate(audio: np.ndarray) -> float:
    frame = SAMPLE_RATE // 100
    energy = np.sqrt(np.mean(audio[: audio.size // frame * frame].reshape(-1, frame) ** 2, axis=1))
    spectrum = np.abs(np.fft.rfft(energy - energy.mean()))
    return float(np.fft.rfftfreq(energy.size, 0.01)[np.argmax(spectrum)])


def test_the_voice_carries_the_emotion_in_pitch_and_the_urgency_in_rate() -> None:
    task = build_conflict_task(train_size=32, test_size=8, seed=1)
    for item in task.train:
        assert abs(_pitch(item.audio) / VOICE[item.emotion][0] - 1) < 0.1
        assert abs(_envelope_rate(item.audio) / RATE[item.urgency][0] - 1) < 0.25
        assert item.audio.dtype == np.float32 and np.abs(item.audio).max() <= 1.0
    again = build_conflict_task(train_size=32, test_size=8, seed=1)
    assert np.array_equal(again.train[5].audio, task.train[5].audio)


def _answer(gold: Gold) -> str:
    return gold.output()


def test_a_group_holds_perception_right_strategy_wrong_and_the_reverse() -> None:
    # A group of rollouts for one urgent, sad item whose emotion and urgency are each heard right
    # or wrong: the scorer's s1 and s3 come apart, in both directions.
    item = ConflictItem("x", np.zeros(10, np.float32), "sad", "urgent", "happy", "we got the house")
    scorer = synthetic_stage_scorer([item])
    group = [
        scorer("x", parse_output(_answer(gold_for(emotion, urgency))))
        for emotion, urgency in itertools.product(("sad", "happy"), URGENCIES)
    ]
    pairs = {(scores.perception, scores.strategy) for scores in group}
    assert pairs == {(1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (0.0, 0.0)}
    # Reasoning follows the emotion, so it is wholly right exactly when perception is.
    assert all((scores.reasoning == 1.0) == (scores.perception == 1.0) for scores in group)
    s1 = np.array([scores.perception for scores in group])
    s3 = np.array([scores.strategy for scores in group])
    assert abs(np.corrcoef(s1, s3)[0, 1]) < 1e-9
