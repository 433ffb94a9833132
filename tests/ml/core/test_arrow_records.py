"""Training records as Arrow (issue 46, paper scale): written in record batches as the rows come,
read back a batch at a time, the same records as the JSONL export."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from ml.core import training_records
from ml.core.training_records import (
    HistoryTurn,
    RecordAudio,
    export_records,
    iter_records,
    read_records,
    read_wav,
    record_from_gold,
)
from tests.ml.jobs.samples import GOLD_PERCEPTION, GOLD_TOM, voiced_wav

NAMES = {"emotional-validation": "Emotional validation", "reflective-listening": "Reflective listening"}


def _rows(count: int) -> list[RecordAudio]:
    """`count` records; every other one a dialogue turn with a turn of history and its audio."""
    audio, rate = read_wav(voiced_wav())
    rows = []
    for n in range(1, count + 1):
        record = record_from_gold(
            f"EE-{n}", f"Take {n}.", "implicit", "sad", GOLD_PERCEPTION, GOLD_TOM, f"Reply {n}.", NAMES
        )
        if n % 2 == 0:
            record = replace(
                record,
                dialogue_id=f"D-{n}",
                turn=2,
                history=(HistoryTurn(turn=1, text="I missed the bus.", reply="That is annoying."),),
            )
            rows.append(RecordAudio(record, audio[: 800 + n], rate, ((audio[:400], rate),)))
        else:
            rows.append(RecordAudio(record, audio[: 800 + n], rate))
    return rows


def test_an_arrow_export_reads_back_as_the_jsonl_export_does(tmp_path: Path) -> None:
    rows = _rows(5)

    arrow_file = export_records(rows, tmp_path / "arrow", records_format="arrow")
    jsonl_file = export_records(rows, tmp_path / "jsonl")

    assert arrow_file.name == "records.arrow"
    from_arrow, from_jsonl = read_records(arrow_file), read_records(jsonl_file)
    assert [row.record for row in from_arrow] == [row.record for row in from_jsonl]
    assert from_arrow[1].record.history[0].audio_path == "audio/EE-2.history-t1.wav"
    assert from_arrow[1].record.gold_tom == GOLD_TOM and from_arrow[1].record.strategies
    assert [len(row.audio) for row in from_arrow] == [len(row.audio) for row in from_jsonl]
    assert [len(row.history_audio) for row in from_arrow] == [0, 1, 0, 1, 0]


def test_rows_go_out_in_batches_as_they_come(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training_records, "ARROW_BATCH", 2)
    rows = _rows(5)
    folder = tmp_path / "streamed"
    written_before_each_row: list[int] = []

    def streamed() -> Iterator[RecordAudio]:
        for row in rows:
            audio = folder / "audio"
            written_before_each_row.append(len(list(audio.glob("EE-?.wav"))) if audio.exists() else 0)
            yield row

    records_file = export_records(streamed(), folder, records_format="arrow")

    # Each row is written before the next is drawn: no more than a batch waits in memory.
    assert written_before_each_row == [0, 1, 2, 3, 4]
    with pa.OSFile(str(records_file), "rb") as source:
        assert [batch.num_rows for batch in pa.ipc.open_stream(source)] == [2, 2, 1]
    assert [number for number, _ in iter_records(records_file)] == [1, 2, 3, 4, 5]


def test_an_empty_arrow_export_reads_back_empty(tmp_path: Path) -> None:
    records_file = export_records(iter([]), tmp_path, records_format="arrow")

    assert read_records(records_file) == []


def test_a_row_that_cannot_be_written_leaves_no_half_arrow_file(tmp_path: Path) -> None:
    good, bad = _rows(2)
    bad = replace(bad, history_audio=())  # a history turn without its audio

    with pytest.raises(ValueError, match="EE-2: history audio does not match"):
        export_records(iter([good, bad]), tmp_path, records_format="arrow")

    assert sorted(path.name for path in tmp_path.iterdir()) == ["audio"]


def test_an_unknown_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown records format 'csv'"):
        export_records(_rows(1), tmp_path, records_format="csv")
