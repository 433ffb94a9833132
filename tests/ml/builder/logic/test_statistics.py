"""B.6's dataset statistics of an export, computed by hand."""

from __future__ import annotations

import numpy as np

from annotation.audio.synthesis import to_wav_bytes
from ml.builder.logic.statistics import DatasetStatistics, wav_seconds
from ml.core.training_records import TrainingRecord


def _wav(seconds: float, rate: int = 16_000) -> bytes:
    return to_wav_bytes(np.zeros(round(seconds * rate), dtype=np.int16), rate)


def _record(item_id: str, dialogue_id: str = "", turn: int = 0) -> TrainingRecord:
    return TrainingRecord(
        item_id=item_id,
        audio_path="",
        scenario="implicit",
        emotion="sad",
        perception="Sad, low energy.",  # 3 words
        reasoning="Context: alone at home.",  # 4 words
        strategies=("Reassurance",),  # 1 word
        speech_style="comforting",
        response="I am here with you.",  # 5 words
        text="I ate alone again tonight.",  # 5 words
        dialogue_id=dialogue_id,
        turn=turn,
    )


def test_table_9_figures_by_hand() -> None:
    stats = DatasetStatistics()
    stats.add(_record("S-1"), _wav(1.8), _wav(3.6))
    for turn in (1, 2):
        stats.add(_record(f"D-1.t{turn}", "D-1", turn), _wav(1.8), _wav(3.6))

    assert stats.to_json() == {
        "single_turn_samples": 1,
        "multi_turn_sessions": 1,
        "turns_per_session": 2.0,
        # 3 x 1.8 s = 5.4 s, 3 x 3.6 s = 10.8 s
        "query_audio_hours": round(5.4 / 3600, 3),
        "response_audio_hours": round(10.8 / 3600, 3),
        "mean_query_words": 5.0,
        "mean_reasoning_words": 8.0,  # perception, reasoning and strategies together
        "mean_response_words": 5.0,
    }


def test_an_empty_export_and_unreadable_audio() -> None:
    assert DatasetStatistics().to_json()["mean_query_words"] is None
    assert wav_seconds(b"not a wav") == 0.0
    assert wav_seconds(_wav(0.5)) == 0.5
