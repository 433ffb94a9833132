"""A build's dataset statistics as the paper reports EchoDialogue-400K's (appendix B.6, Table 9).

Counted from the exported records (an annotator's fix included) and their audio: single-turn
samples, multi-turn sessions and turns per session, hours of query and of response audio, and the
mean words per query, per reasoning (the whole <think> part: perception, mental-state reasoning and
strategies) and per response. Pure: the export feeds it records and WAV bytes.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass, field
from typing import Any

from annotation.audio.acoustics import count_words
from ml.core.training_records import TrainingRecord


def wav_seconds(data: bytes) -> float:
    """Return a WAV file's duration from its header (0 when it is not a readable WAV)."""
    try:
        with wave.open(io.BytesIO(data)) as reader:
            rate = reader.getframerate()
            return reader.getnframes() / rate if rate else 0.0
    except (wave.Error, EOFError):
        return 0.0


@dataclass
class DatasetStatistics:
    single_turn: int = 0
    dialogue_turns: int = 0
    sessions: set[str] = field(default_factory=set)
    query_seconds: float = 0.0
    response_seconds: float = 0.0
    query_words: int = 0
    reasoning_words: int = 0
    response_words: int = 0

    def add(self, record: TrainingRecord, query_audio: bytes, response_audio: bytes) -> None:
        """Count one exported record and its two audio files."""
        if record.dialogue_id:
            self.sessions.add(record.dialogue_id)
            self.dialogue_turns += 1
        else:
            self.single_turn += 1
        self.query_seconds += wav_seconds(query_audio)
        self.response_seconds += wav_seconds(response_audio)
        self.query_words += count_words(record.text)
        self.reasoning_words += count_words(
            " ".join([record.perception, record.reasoning, *record.strategies])
        )
        self.response_words += count_words(record.response)

    def to_json(self) -> dict[str, Any]:
        """Return Table 9's rows (hours to 0.001, means to 0.1; None where nothing was counted)."""
        samples = self.single_turn + self.dialogue_turns

        def mean(total: int) -> float | None:
            return round(total / samples, 1) if samples else None

        return {
            "single_turn_samples": self.single_turn,
            "multi_turn_sessions": len(self.sessions),
            "turns_per_session": round(self.dialogue_turns / len(self.sessions), 2)
            if self.sessions
            else None,
            "query_audio_hours": round(self.query_seconds / 3600, 3),
            "response_audio_hours": round(self.response_seconds / 3600, 3),
            "mean_query_words": mean(self.query_words),
            "mean_reasoning_words": mean(self.reasoning_words),
            "mean_response_words": mean(self.response_words),
        }


# How the build page names each figure, in Table 9's order.
STATISTICS_LABELS: dict[str, str] = {
    "single_turn_samples": "Samples (single-turn)",
    "multi_turn_sessions": "Sessions (multi-turn)",
    "turns_per_session": "Turns per session",
    "query_audio_hours": "Query audio (hours)",
    "response_audio_hours": "Response audio (hours)",
    "mean_query_words": "Average query length (words)",
    "mean_reasoning_words": "Average reasoning length (words)",
    "mean_response_words": "Average response length (words)",
}
