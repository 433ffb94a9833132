"""Gold references rendered as EchoChat's training target, and the JSONL export round trip (no database)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ml.core.training_records import RecordAudio, export_records, read_records, read_wav, record_from_gold
from tests.ml.jobs.samples import GOLD_PERCEPTION, GOLD_TOM, voiced_wav
from webapp.lib.output_format import parse_output, parse_reasoning_fields, parse_strategy_fields

NAMES = {"emotional-validation": "Emotional validation"}


def test_the_target_carries_every_gold_field_in_its_span() -> None:
    record = record_from_gold(
        "EE-1",
        "I ate alone.",
        "implicit",
        "neutral",
        GOLD_PERCEPTION,
        GOLD_TOM,
        " That sounds lonely. ",
        NAMES,
    )
    assert record.target is not None
    parsed = parse_output(record.target)
    assert parsed.well_formed
    assert parsed.span_text("perception") == (
        "Emotion: sad (loneliness); intensity medium, polarity negative. Prosody: low pitch. Soft and slow. "
        "Situation: eats alone. Modality: the words and the voice agree."
    )
    assert parse_reasoning_fields(parsed.span_text("reasoning")) == {
        "context": "alone again",
        "latent_need": "company",
        "core_demand": "be heard",
        "constraints": "avoid lecturing",
    }
    strategy = parse_strategy_fields(parsed.span_text("strategy"))
    # sad calls for a comforting voice
    assert (strategy.strategies, strategy.speech_style) == (["emotional validation"], "comforting")
    assert parsed.span_text("response") == "That sounds lonely."
    assert record.emotion == "sad"


def test_a_conflict_and_an_emotion_shift_are_spelled_out() -> None:
    perception = {
        "emotion": "angry",
        "modality_conflict": True,
        "conflict_kind": "sarcasm",
        "stressed_words": ["love"],
        "emotion_segments": [
            {"start": 0.0, "end": 1.25, "emotion": "neutral", "words": "Great"},
            {"start": 1.25, "end": 2.0, "emotion": "angry"},
        ],
    }
    record = record_from_gold("EE-2", "Great.", "emotion-shift", "angry", perception, {}, "", {})
    assert record.perception == (
        'Emotion: angry. Prosody: stress on "love". Modality: the words and the voice conflict (sarcasm). '
        'Emotion shift: 0.0-1.2 s neutral "Great"; then 1.2-2.0 s angry.'
    )
    # no reference response, no SFT target
    assert record.target is None


def test_an_export_reads_back_with_its_audio(tmp_path: Path) -> None:
    audio, rate = read_wav(voiced_wav())
    record = record_from_gold(
        "EE-1", "I ate alone.", "implicit", "sad", GOLD_PERCEPTION, GOLD_TOM, "Hi.", NAMES
    )
    records_file = export_records([RecordAudio(record, audio, rate)], tmp_path)

    (row,) = read_records(records_file)

    assert row.record.audio_path == "audio/EE-1.wav"
    assert row.record.target == record.target
    assert row.record.gold_tom == GOLD_TOM
    assert row.sample_rate == rate
    # 16-bit PCM: equal to within one quantisation step
    assert np.max(np.abs(row.audio - audio)) <= 1 / 32768


def _rows(count: int) -> list[RecordAudio]:
    audio, rate = read_wav(voiced_wav())
    return [
        RecordAudio(
            record_from_gold(
                f"EE-{n}", f"Take {n}.", "implicit", "sad", GOLD_PERCEPTION, GOLD_TOM, f"Reply {n}.", NAMES
            ),
            audio[: 800 + n],
            rate,
        )
        for n in range(1, 6)
    ][:count]


def test_a_streamed_export_writes_what_the_whole_list_export_wrote(tmp_path: Path) -> None:
    rows = _rows(5)
    folder = tmp_path / "streamed"
    written_before_each_row: list[int] = []

    def streamed() -> Iterator[RecordAudio]:
        for row in rows:
            audio = folder / "audio"
            written_before_each_row.append(len(list(audio.iterdir())) if audio.exists() else 0)
            yield row

    records_file = export_records(streamed(), folder)

    # Each row is written before the next is drawn: no row waits in memory.
    assert written_before_each_row == [0, 1, 2, 3, 4]

    # The file as export_records wrote it when it joined every line in memory first.
    whole = "\n".join(
        replace(row.record, audio_path=f"audio/{row.record.item_id}.wav").to_json() for row in rows
    )
    assert records_file.read_text(encoding="utf-8") == whole + "\n"
    assert [row.record.item_id for row in read_records(records_file)] == [f"EE-{n}" for n in range(1, 6)]
    assert sorted(path.name for path in (tmp_path / "streamed").iterdir()) == ["audio", "records.jsonl"]


def test_a_row_that_cannot_be_written_leaves_no_half_records_file(tmp_path: Path) -> None:
    good, bad = _rows(2)
    bad = replace(bad, history_audio=((bad.audio, bad.sample_rate),))  # audio for a turn it lacks

    with pytest.raises(ValueError, match="EE-2: history audio does not match"):
        export_records(iter([good, bad]), tmp_path)

    assert sorted(path.name for path in tmp_path.iterdir()) == ["audio"]
