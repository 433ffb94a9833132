"""Training records: one accepted recording with its gold reference, rendered as EchoChat's target.

A record is what SFT, RL, reward training and the multi-GPU command line all start from. The web
app builds records from the database (``ml.jobs.datasets``); ``export`` writes them as a folder holding
``records.jsonl`` (one JSON object per line), or ``records.arrow`` (an Arrow IPC stream written in
record batches, issue 46), and the user audio as 16 kHz WAV files, which ``ml.cli`` reads back on a
GPU box with no Django. Both are written and read a record (or a batch) at a time, so 400K records
never sit in memory; pyarrow is imported only when an Arrow file is written or read.

The spans of the target come from the gold reference: perception from the perception labels,
reasoning from the theory-of-mind fields, strategy from the recommended strategies and the
speech style that fits the user's emotion, and the response from the reference response. A
record without a reference response has no SFT target; RL and inference still use it.

No torch here: the web process builds snapshots without loading it.
"""

from __future__ import annotations

import io
import json
import wave
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from webapp.lib.jsonlines import json_text
from webapp.lib.output_format import render_output, render_reasoning, render_strategy

RECORDS_FILE = "records.jsonl"
ARROW_RECORDS_FILE = "records.arrow"
RECORD_FORMATS = {"jsonl": RECORDS_FILE, "arrow": ARROW_RECORDS_FILE}
# Records per Arrow record batch: what the writer holds before writing, and the reader at once.
ARROW_BATCH = 1024
# Written beside the records by the web app's export: {"snapshot": id, "content_hash": ..., ...}.
MANIFEST_FILE = "manifest.json"
AUDIO_FOLDER = "audio"
# The one instruction EchoChat is trained, rewarded and evaluated with.
ECHOCHAT_INSTRUCTION = (
    "Listen to the user. First think: describe what you perceive in their voice and words, reason "
    "about what they feel and need, and choose support strategies and a speech style. Then respond "
    "with empathy."
)


@dataclass(frozen=True)
class HistoryTurn:
    """One earlier exchange of a dialogue, as the model hears it before the current turn.

    `audio_path` is the user's audio for that turn, relative to the records file's folder like
    `TrainingRecord.audio_path` ("" before export, or when the turn is given as text only);
    `reply` is the assistant's answer that followed it (gold, reference or the model's own).
    """

    turn: int
    text: str
    audio_path: str = ""
    reply: str = ""


@dataclass(frozen=True)
class TrainingRecord:
    item_id: str  # the item's external id
    audio_path: str  # WAV file relative to the records file's folder ("" before export)
    scenario: str
    emotion: str
    perception: str
    reasoning: str
    strategies: tuple[str, ...]
    speech_style: str
    response: str  # the reference response; "" when the gold reference has none
    prompt: str = ECHOCHAT_INSTRUCTION
    # What a judge compares rollouts with: the words spoken and the gold labels as stored.
    text: str = ""
    gold_perception: dict[str, Any] = field(default_factory=dict)
    gold_tom: dict[str, Any] = field(default_factory=dict)
    # Multi-turn (paper B.5): the dialogue, this turn's number and the exchanges before it. The
    # loss stays on this turn's target; the history only conditions it. Single-turn: "", 0, ().
    dialogue_id: str = ""
    turn: int = 0
    history: tuple[HistoryTurn, ...] = ()

    @property
    def target(self) -> str | None:
        """Return the full output the model is trained to write, or None without a reference response."""
        if not self.response.strip():
            return None
        return render_output(
            self.perception,
            self.reasoning,
            render_strategy(self.strategies, self.speech_style),
            self.response,
        )

    def to_json(self) -> str:
        """Return the record as one JSONL line (no newline)."""
        values = asdict(self)
        values["strategies"] = list(self.strategies)
        values["history"] = [asdict(turn) for turn in self.history]
        return json_text(values, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> TrainingRecord:
        """Return a record read from ``to_json`` output; unknown keys are an error."""
        values = json.loads(line)
        known = {entry.name for entry in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown record field(s): {', '.join(unknown)}")
        values["strategies"] = tuple(values.get("strategies", ()))
        values["history"] = tuple(HistoryTurn(**turn) for turn in values.get("history", ()))
        return cls(**values)


@dataclass(frozen=True)
class RecordAudio:
    """A record with the user's audio (mono float32 in [-1, 1]).

    ``history_audio`` holds the user audio of each of ``record.history``'s turns, in the same
    order, as (samples, sample rate).
    """

    record: TrainingRecord
    audio: npt.NDArray[np.float32]
    sample_rate: int
    history_audio: tuple[tuple[npt.NDArray[np.float32], int], ...] = ()


def render_gold_perception(perception: Mapping[str, Any]) -> str:
    """Return a perception span written from gold perception labels (empty fields are left out)."""
    sentences: list[str] = []
    emotion = str(perception.get("emotion") or "")
    if emotion:
        variant = str(perception.get("emotion_variant") or "")
        details = [f"intensity {perception['intensity']}"] if perception.get("intensity") else []
        if perception.get("polarity"):
            details.append(f"polarity {perception['polarity']}")
        named = f"{emotion} ({variant})" if variant else emotion
        sentences.append(f"Emotion: {named}" + (f"; {', '.join(details)}." if details else "."))
    prosody = [
        f"{perception[name]} {label}"
        for name, label in (("pitch", "pitch"), ("energy", "energy"), ("rate", "speaking rate"))
        if perception.get(name)
    ]
    if perception.get("intonation"):
        prosody.append(f"{perception['intonation']} intonation")
    stressed = [str(word) for word in perception.get("stressed_words") or []]
    if stressed:
        prosody.append("stress on " + ", ".join(f'"{word}"' for word in stressed))
    if prosody:
        sentences.append(f"Prosody: {'; '.join(prosody)}.")
    caption = str(perception.get("prosody_caption") or "").strip().rstrip(".")
    if caption:
        sentences.append(caption[0].upper() + caption[1:] + ".")
    if perception.get("situation"):
        sentences.append(f"Situation: {str(perception['situation']).strip().rstrip('.')}.")
    if perception.get("modality_conflict"):
        kind = str(perception.get("conflict_kind") or "")
        sentences.append("Modality: the words and the voice conflict" + (f" ({kind})." if kind else "."))
    elif emotion:
        sentences.append("Modality: the words and the voice agree.")
    segments = perception.get("emotion_segments") or []
    if segments:
        parts = [
            f"{float(segment['start']):.1f}-{float(segment['end']):.1f} s {segment['emotion']}"
            + (f' "{segment["words"]}"' if segment.get("words") else "")
            for segment in segments
        ]
        sentences.append(f"Emotion shift: {'; then '.join(parts)}.")
    return " ".join(sentences)


def render_gold_reasoning(tom: Mapping[str, Any]) -> str:
    """Return a reasoning span with the four theory-of-mind fields of a gold reference."""
    constraints = tom.get("constraints") or []
    return render_reasoning(
        context=str(tom.get("context") or ""),
        latent_need=str(tom.get("latent_need") or ""),
        core_demand=str(tom.get("core_demand") or ""),
        constraints="; ".join(f"avoid {str(entry).strip()}" for entry in constraints) or "none",
    )


def strategy_display_names(slugs: Iterable[str], names_by_slug: Mapping[str, str]) -> tuple[str, ...]:
    """Return the taxonomy names of strategy slugs ("emotional-validation" -> "Emotional validation")."""
    return tuple(names_by_slug.get(slug) or slug.replace("-", " ").replace("_", " ") for slug in slugs)


def record_from_gold(
    item_id: str,
    text: str,
    scenario: str,
    fallback_emotion: str,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    reference_response: str,
    names_by_slug: Mapping[str, str],
) -> TrainingRecord:
    """Return the training record of one item from its gold reference.

    The emotion is the gold one (the script's target emotion when gold has none); the speech style
    is the one that fits it, which is what the reward model scores as aligned.
    """
    # Imported here: the reward model package loads torch, which the web process never needs.
    from ml.core.reward.ladder import fitting_speech_style

    emotion = str(perception.get("emotion") or fallback_emotion)
    return TrainingRecord(
        item_id=item_id,
        audio_path="",
        scenario=scenario,
        emotion=emotion,
        perception=render_gold_perception(perception),
        reasoning=render_gold_reasoning(tom),
        strategies=strategy_display_names(tom.get("recommended_strategies") or [], names_by_slug),
        speech_style=fitting_speech_style(emotion),
        response=reference_response.strip(),
        text=text,
        gold_perception=dict(perception),
        gold_tom=dict(tom),
    )


# --- audio -----------------------------------------------------------------------------


def wav_bytes(samples: npt.NDArray[np.float32], sample_rate: int) -> bytes:
    """Return mono float samples in [-1, 1] as 16-bit PCM WAV bytes."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(sample_rate)
        writer.writeframes(pcm.tobytes())
    return buffer.getvalue()


def read_wav(data: bytes) -> tuple[npt.NDArray[np.float32], int]:
    """Return the float samples in [-1, 1] and rate of a mono 16-bit WAV."""
    with wave.open(io.BytesIO(data)) as reader:
        if reader.getnchannels() != 1 or reader.getsampwidth() != 2:
            raise ValueError("expected a mono 16-bit WAV")
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
        return (pcm.astype(np.float32) / 32768.0), reader.getframerate()


# --- export and import -----------------------------------------------------------------


def _arrow_schema() -> Any:
    """The Arrow schema of a record: one column per field; the free-form gold documents as JSON text."""
    import pyarrow as pa

    text = pa.string()
    history = pa.struct([("turn", pa.int32()), ("text", text), ("audio_path", text), ("reply", text)])
    return pa.schema(
        [
            *((entry.name, text) for entry in fields(TrainingRecord) if entry.type == "str"),
            ("strategies", pa.list_(text)),
            ("gold_perception", text),
            ("gold_tom", text),
            ("turn", pa.int32()),
            ("history", pa.list_(history)),
        ]
    )


def _arrow_row(record: TrainingRecord) -> dict[str, Any]:
    values = asdict(record)
    values["strategies"] = list(record.strategies)
    values["gold_perception"] = json_text(record.gold_perception, sort_keys=True)
    values["gold_tom"] = json_text(record.gold_tom, sort_keys=True)
    values["history"] = [asdict(turn) for turn in record.history]
    return values


def _record_from_arrow(values: dict[str, Any]) -> TrainingRecord:
    values["strategies"] = tuple(values["strategies"] or ())
    values["gold_perception"] = json.loads(values["gold_perception"] or "{}")
    values["gold_tom"] = json.loads(values["gold_tom"] or "{}")
    values["history"] = tuple(HistoryTurn(**turn) for turn in values["history"] or ())
    return TrainingRecord(**values)


@contextmanager
def _record_writer(path: Path, records_format: str) -> Iterator[Callable[[TrainingRecord], None]]:
    """Yield a function writing one record to `path`: a JSONL line, or a row of the Arrow batch
    being filled (written every `ARROW_BATCH` records and at the end)."""
    if records_format == "jsonl":
        with path.open("w", encoding="utf-8") as records:
            written = 0

            def write_line(record: TrainingRecord) -> None:
                nonlocal written
                records.write(record.to_json() + "\n")
                written += 1

            yield write_line
            if not written:
                records.write("\n")  # as the file has always read with no record
        return
    import pyarrow as pa

    schema = _arrow_schema()
    batch: list[dict[str, Any]] = []
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:

        def flush() -> None:
            if batch:
                writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
                batch.clear()

        def write_row(record: TrainingRecord) -> None:
            batch.append(_arrow_row(record))
            if len(batch) >= ARROW_BATCH:
                flush()

        yield write_row
        flush()


def export_records(rows: Iterable[RecordAudio], folder: Path, *, records_format: str = "jsonl") -> Path:
    """Write the records (records.jsonl, or records.arrow with ``records_format="arrow"``) and one
    WAV per record into ``folder``; return the records file.

    Rows are written as they come (a line each, or an Arrow batch of `ARROW_BATCH`), so an iterator
    of 400K rows never sits in memory. The records go to a part file renamed at the end: a row that
    fails leaves no half records file.
    """
    if records_format not in RECORD_FORMATS:
        raise ValueError(f"unknown records format {records_format!r}: one of {', '.join(RECORD_FORMATS)}")
    (folder / AUDIO_FOLDER).mkdir(parents=True, exist_ok=True)
    records_file = folder / RECORD_FORMATS[records_format]
    part = folder / f"{records_file.name}.part"
    try:
        with _record_writer(part, records_format) as write:
            for row in rows:
                if len(row.history_audio) != len(row.record.history):
                    raise ValueError(f"{row.record.item_id}: history audio does not match its history turns")
                relative = f"{AUDIO_FOLDER}/{row.record.item_id}.wav"
                (folder / relative).write_bytes(wav_bytes(row.audio, row.sample_rate))
                history: list[HistoryTurn] = []
                for turn, (samples, rate) in zip(row.record.history, row.history_audio, strict=True):
                    # Each record keeps its own copy: a record file stays readable whatever else is dropped.
                    turn_path = f"{AUDIO_FOLDER}/{row.record.item_id}.history-t{turn.turn}.wav"
                    (folder / turn_path).write_bytes(wav_bytes(samples, rate))
                    history.append(replace(turn, audio_path=turn_path))
                write(replace(row.record, audio_path=relative, history=tuple(history)))
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    part.replace(records_file)
    return records_file


def iter_records(records_file: Path) -> Iterator[tuple[int, TrainingRecord]]:
    """Yield (number, record) of a records file, JSONL (by line) or Arrow (``.arrow``: by record
    batch), a line or a batch at a time; a record that cannot be read is a ValueError naming it."""
    if records_file.suffix == ".arrow":
        import pyarrow as pa

        number = 0
        with pa.OSFile(str(records_file), "rb") as source:
            for batch in pa.ipc.open_stream(source):
                for values in batch.to_pylist():
                    number += 1
                    try:
                        yield number, _record_from_arrow(values)
                    except (ValueError, TypeError) as exc:
                        raise ValueError(f"{records_file}: record {number}: {exc}") from exc
        return
    with records_file.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield number, TrainingRecord.from_json(line)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{records_file}:{number}: {exc}") from exc


def iter_record_audio(records_file: Path) -> Iterator[RecordAudio]:
    """Yield the records of an export (`iter_records`) with their audio, one at a time."""
    for number, record in iter_records(records_file):
        audio, sample_rate = read_wav((records_file.parent / record.audio_path).read_bytes())
        missing = [turn.turn for turn in record.history if not turn.audio_path]
        if missing:
            raise ValueError(f"{records_file}:{number}: history turn(s) {missing} have no audio")
        history_audio = tuple(
            read_wav((records_file.parent / turn.audio_path).read_bytes()) for turn in record.history
        )
        yield RecordAudio(record, audio, sample_rate, history_audio)


def read_records(records_file: Path) -> list[RecordAudio]:
    """Return the records of an export, JSONL or Arrow, with their audio (paths relative to the
    file's folder)."""
    return list(iter_record_audio(records_file))
