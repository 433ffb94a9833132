"""Export gold references with their items and audio, as JSONL and as a Hugging Face dataset.

One row per item with a current gold reference:

    {"id": "EE-0001", "text": ..., "scenario": ..., "target_emotion": ..., "emotion_variant": ...,
     "target_intensity": ..., "split": ..., "instructions": ...,
     "audio": <see below>, "duration_seconds": 3.2,
     "perception": {...}, "tom": {...}            (annotation.labelling.schema documents)
     "reference_response": ..., "gold_version": 2, "adjudicated_by": "lead", "adjudicated_at": ISO,
     "fast_tracked": false, "adjudication_note": ...,
     "annotations": [{"annotator": "ann1", "perception": {...}, "tom": {...}, "submitted_at": ISO}, ...],
     "dialogue_id": "ED-1" | "", "turn": 3 | null, "expected_strategy": ..., "reference_reply": ...,
     "cross_turn": {...} | null, "history": [{"turn", "text", "audio", "reply"}, ...]}

(The dialogue fields and their rules: `annotation.gold.dialogue.rows`.)

An export folder holds both formats:
- `gold.jsonl`, with "audio" the path of a WAV file under `audio/` (relative to the JSONL file);
- `data/<split>-00000-of-00001.parquet` and a `README.md` dataset card, loadable with
  `datasets.load_dataset(folder)`, with "audio" a `datasets.Audio` column embedding the WAV bytes.

`annotation.gold.importing` reads either format back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import Prefetch, QuerySet

from annotation.audio.joining import SegmentOutOfRange, cut_segments
from annotation.gold.access import gold_hidden_from
from annotation.gold.datasheet import DATASHEET_NAME, Release, datasheet
from annotation.gold.dialogue.rows import dialogue_fields, exported_cross_turn
from annotation.gold.models import GoldReference
from annotation.labelling.dialogue.cross_turn import empty_cross_turn
from annotation.labelling.models import Annotation
from annotation.labelling.schema import empty_perception, empty_tom, normalise_perception, normalise_tom
from annotation.recording.consent.models import PUBLIC_RELEASE, RESEARCH_EVALUATION
from annotation.recording.models import Item, recording_consented_for
from webapp.lib.jsonlines import json_line
from webapp.models import User
from webapp.storage import read_media

# datasets and pyarrow (with pandas behind them) cost ~250 MB and seconds to import: they load when an
# export runs, never with the web app (tests/webapp/test_import_weight.py).
if TYPE_CHECKING:
    import datasets
    import pyarrow.parquet as pq

JSONL_NAME = "gold.jsonl"
AUDIO_FOLDER = "audio"
PARQUET_FOLDER = "data"
SAMPLE_RATE = 16_000
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ExportSummary:
    rows: int
    jsonl_path: Path | None
    parquet_paths: list[Path]
    take_ids: list[int] = field(default_factory=list)  # the takes whose audio the export holds
    datasheet_path: Path | None = None


# --- Schema -------------------------------------------------------------------------------------


def gold_features() -> datasets.Features:
    """Return the HF dataset schema of an export (perception and ToM as typed structs)."""
    import datasets

    text = datasets.Value("string")
    perception = {
        name: datasets.Value("bool") if isinstance(default, bool) else text
        for name, default in empty_perception().items()
        if not isinstance(default, list)
    }
    perception["stressed_words"] = datasets.List(text)
    perception["emotion_segments"] = datasets.List(
        {"start": datasets.Value("float64"), "end": datasets.Value("float64"), "emotion": text, "words": text}
    )
    tom = {
        name: datasets.List(text) if isinstance(default, list) else text
        for name, default in empty_tom().items()
    }
    cross_turn = {
        name: datasets.List(text) if isinstance(default, list) else text
        for name, default in empty_cross_turn().items()
    }
    audio = datasets.Audio(sampling_rate=SAMPLE_RATE, decode=False)
    return datasets.Features(
        {
            "id": text,
            "text": text,
            "scenario": text,
            "target_emotion": text,
            "emotion_variant": text,
            "target_intensity": text,
            "split": text,
            "instructions": text,
            "audio": audio,
            "duration_seconds": datasets.Value("float64"),
            "perception": perception,
            "tom": tom,
            "reference_response": text,
            "gold_version": datasets.Value("int32"),
            "adjudicated_by": text,
            "adjudicated_at": text,
            "fast_tracked": datasets.Value("bool"),
            "adjudication_note": text,
            "annotations": datasets.List(
                {
                    "annotator": text,
                    "perception": perception,
                    "tom": tom,
                    "submitted_at": text,
                    "cross_turn": cross_turn,
                }
            ),
            "dialogue_id": text,
            "turn": datasets.Value("int32"),
            "expected_strategy": text,
            "reference_reply": text,
            "cross_turn": cross_turn,  # null for a single item or a first turn
            "history": datasets.List(
                {"turn": datasets.Value("int32"), "text": text, "audio": audio, "reply": text}
            ),
        }
    )


# --- Export -------------------------------------------------------------------------------------


def gold_items(
    scenario: str | None = None,
    split: str | None = None,
    *,
    viewer: User | None = None,
    scope: str = RESEARCH_EVALUATION,
) -> QuerySet[Item]:
    """Return items with a current gold reference, with everything an export row needs; for a
    `viewer`, without the items whose gold and labels are hidden from them (`gold_hidden_from`).
    Items whose recording's actor does not allow `scope` are left out (`Take.objects.consented_for`;
    a public release asks for PUBLIC_RELEASE)."""
    items = Item.objects.filter(GoldReference.objects.current_exists("pk")).filter(
        recording_consented_for(scope)
    )
    if viewer is not None:
        items = items.exclude(pk__in=gold_hidden_from(viewer))
    if scenario:
        items = items.filter(scenario=scenario)
    if split:
        items = items.filter(split=split)
    return items.select_related("recording", "dialogue").prefetch_related(
        Prefetch(
            "gold_references",
            queryset=GoldReference.objects.current().select_related("adjudicated_by"),
            to_attr="current_gold",
        ),
        Prefetch(
            "annotations",
            queryset=Annotation.objects.submitted(),
            to_attr="submitted",
        ),
    )


def export_rows(
    items: Iterable[Item], *, audio_bytes: bool = True, audio_link: Callable[[str], str] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield one export row per item, with "audio" as {"bytes", "path"} (or None without a recording).

    Without `audio_bytes` (the API's JSONL, which links the audio) "bytes" is None: no file is read;
    `audio_link(key)` then gives the history's audio as links, as the API gives the row's own.
    """
    for item in items:
        gold: GoldReference = item.current_gold[0]  # type: ignore[attr-defined]
        recording = item.recording
        audio = None
        if recording is not None and recording.audio_key:
            data = read_media(recording.audio_key) if audio_bytes else None
            audio = {"bytes": data, "path": audio_file_name(item.external_id)}
        yield {
            "id": item.external_id,
            "text": item.text,
            "scenario": item.scenario,
            "target_emotion": item.target_emotion,
            "emotion_variant": item.emotion_variant,
            "target_intensity": item.target_intensity,
            "split": item.split,
            "instructions": item.instructions,
            "audio": audio,
            "duration_seconds": recording.duration_seconds if recording else 0.0,
            "perception": normalise_perception(gold.perception),
            "tom": normalise_tom(gold.tom),
            "reference_response": gold.reference_response,
            "gold_version": gold.version,
            "adjudicated_by": gold.adjudicated_by.username if gold.adjudicated_by else "",
            "adjudicated_at": gold.created_at.isoformat(),
            "fast_tracked": gold.fast_tracked,
            "adjudication_note": gold.note,
            "annotations": [
                {
                    "annotator": annotation.annotator.username,
                    "perception": normalise_perception(annotation.perception),
                    "tom": normalise_tom(annotation.tom),
                    "submitted_at": annotation.submitted_at.isoformat() if annotation.submitted_at else "",
                    "cross_turn": exported_cross_turn(annotation.cross_turn, item.turn),
                }
                for annotation in item.submitted  # type: ignore[attr-defined]
            ],
            **dialogue_fields(
                item,
                gold.cross_turn,
                audio_bytes=audio_bytes,
                audio_name=audio_file_name,
                audio_link=audio_link,
            ),
        }


def audio_file_name(external_id: str) -> str:
    """Return a safe WAV file name for an item id."""
    return f"{_SAFE_NAME.sub('_', external_id)}.wav"


def export_gold(
    folder: Path,
    *,
    jsonl: bool = True,
    parquet: bool = True,
    scenario: str | None = None,
    split: str | None = None,
    on_row: Callable[[int, int], None] | None = None,
    viewer: User | None = None,
    release: Release | None = None,
) -> ExportSummary:
    """Write the gold references (optionally of one scenario or split) into `folder`.

    Rows stream from the database to the files in batches, so an export of every item never
    holds all the audio in memory at once. `on_row(done, total)` follows the progress. For a
    `viewer`, the items they are still labelling are left out (`gold.access.gold_hidden_from`).
    Only takes consented for research evaluation are exported; an export for publication
    (`release`) holds only takes consented for public release, and carries DATASHEET.md.
    """
    folder.mkdir(parents=True, exist_ok=True)
    jsonl_writer = JsonlWriter(folder) if jsonl else None
    parquet_writer = ParquetWriter(folder) if parquet else None
    items = gold_items(
        scenario, split, viewer=viewer, scope=PUBLIC_RELEASE if release is not None else RESEARCH_EVALUATION
    )
    total = items.count() if on_row is not None else 0
    count = 0
    take_ids: list[int] = []
    try:
        for item, row in zip_rows(items.iterator(chunk_size=200)):
            if item.recording_id is not None:
                take_ids.append(item.recording_id)
            if jsonl_writer is not None:
                jsonl_writer.write(row)
            if parquet_writer is not None:
                parquet_writer.write(row)
            count += 1
            if on_row is not None:
                on_row(count, total)
    finally:
        jsonl_path = jsonl_writer.close() if jsonl_writer is not None else None
        parquet_paths = parquet_writer.close() if parquet_writer is not None else []
    datasheet_path = None
    if release is not None:
        datasheet_path = folder / DATASHEET_NAME
        datasheet_path.write_text(datasheet(items, release, viewer=viewer), encoding="utf-8")
    return ExportSummary(
        rows=count,
        jsonl_path=jsonl_path,
        parquet_paths=parquet_paths,
        take_ids=take_ids,
        datasheet_path=datasheet_path,
    )


def zip_rows(items: Iterable[Item]) -> Iterator[tuple[Item, dict[str, Any]]]:
    """Yield each item with its export row (`export_rows`), one at a time."""
    for item in items:
        yield item, next(export_rows([item]))


class JsonlWriter:
    """Writes rows to gold.jsonl, each row's audio to a WAV file under audio/ named in the row."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / AUDIO_FOLDER).mkdir(parents=True, exist_ok=True)
        self.path = folder / JSONL_NAME
        self._handle = self.path.open("w", encoding="utf-8")

    def write(self, row: Mapping[str, Any]) -> None:
        audio = row["audio"]
        relative = None
        if audio is not None:
            relative = f"{AUDIO_FOLDER}/{audio['path']}"
            (self.folder / relative).write_bytes(audio["bytes"])
        history = []
        for turn in row.get("history") or []:
            turn_audio = turn["audio"]
            if turn_audio is not None:
                (self.folder / AUDIO_FOLDER / turn_audio["path"]).write_bytes(turn_audio["bytes"])
            history.append({**turn, "audio": f"{AUDIO_FOLDER}/{turn_audio['path']}" if turn_audio else None})
        line = {**row, "audio": relative, "history": history, "segment_audio": self._segment_clips(row)}
        self._handle.write(json_line(line))

    def _segment_clips(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Write each gold emotion-shift segment of the take as its own WAV; return where they are.

        Segment-level clips are what a shift-perception model trains on; the gold's own segment
        list stays as it was, so the row imports back unchanged.
        """
        segments = row["perception"].get("emotion_segments") or []
        if not segments or row["audio"] is None:
            return []
        spans = [(float(segment["start"]), float(segment["end"])) for segment in segments]
        try:
            clips = cut_segments(row["audio"]["bytes"], spans)
        except SegmentOutOfRange:
            return []  # gold from an older take whose length differs: no clip beats a wrong one
        stem = row["audio"]["path"].removesuffix(".wav")
        written = []
        for number, (segment, clip) in enumerate(zip(segments, clips, strict=True), start=1):
            relative = f"{AUDIO_FOLDER}/{stem}.segment{number}.wav"
            (self.folder / relative).write_bytes(clip)
            written.append(
                {
                    "start": segment["start"],
                    "end": segment["end"],
                    "emotion": segment.get("emotion"),
                    "audio": relative,
                }
            )
        return written

    def close(self) -> Path:
        self._handle.close()
        return self.path


class ParquetWriter:
    """Writes rows to one parquet file per split under data/, plus a dataset card, in batches."""

    BATCH_ROWS = 200

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / PARQUET_FOLDER).mkdir(parents=True, exist_ok=True)
        # Written with pyarrow against the dataset's own Arrow schema (which carries the `datasets`
        # feature metadata): datasets' Audio encoder would need torchcodec just to copy WAV bytes.
        self.schema = gold_features().arrow_schema
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._pending: dict[str, list[Mapping[str, Any]]] = {}

    def path_for(self, split_name: str) -> Path:
        return self.folder / PARQUET_FOLDER / f"{split_name}-00000-of-00001.parquet"

    def write(self, row: Mapping[str, Any]) -> None:
        pending = self._pending.setdefault(row["split"], [])
        pending.append(row)
        if len(pending) >= self.BATCH_ROWS:
            self._flush(row["split"])

    def _flush(self, split_name: str) -> None:
        rows = self._pending.get(split_name) or []
        if not rows:
            return
        if split_name not in self._writers:
            import pyarrow.parquet as pq

            self._writers[split_name] = pq.ParquetWriter(self.path_for(split_name), self.schema)
        import pyarrow as pa

        self._writers[split_name].write_table(pa.Table.from_pylist(rows, schema=self.schema))
        self._pending[split_name] = []

    def close(self) -> list[Path]:
        for split_name in list(self._pending):
            self._flush(split_name)
        for writer in self._writers.values():
            writer.close()
        splits = sorted(self._writers)
        (self.folder / "README.md").write_text(_dataset_card(splits), encoding="utf-8")
        return [self.path_for(split_name) for split_name in splits]


def _dataset_card(splits: Sequence[str]) -> str:
    data_files = "".join(
        f"  - split: {name}\n    path: {PARQUET_FOLDER}/{name}-*.parquet\n" for name in splits
    )
    return (
        f"---\nlicense: {settings.ECHOEVAL_LICENSE}\nconfigs:\n- config_name: default\n  data_files:\n"
        + data_files
        + "---\n\n# EchoEval gold references\n\n"
        "Adjudicated perception and Theory-of-Mind references with the items and their audio "
        "(16 kHz mono WAV), exported from EchoStudio. `perception` and `tom` follow "
        "`annotation/label_schema.py`; `annotations` holds each annotator's submitted labels.\n"
    )
