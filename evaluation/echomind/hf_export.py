"""Each EchoMind set (one script type: paralinguistic, speaker, environment ...) as a Hugging Face
dataset folder: ``echomind-<type>/`` loadable by ``datasets.load_from_disk``, with its rows also as
``data/test-00000-of-00001.parquet`` and a dataset card naming the licence.

One row a delivery: its case (id, topic, script, attribute, alternative attribute), its role, its
accepted audio (WAV bytes, as the released layout exports them) and its multiple-choice questions.

Also each set as a VoiceBench-style JSONL (``echomind-<type>.jsonl``, audio under ``audio/``) that
a harness runs as it is, and whose result file imports back as replies (`write_echomind_voicebench`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotation.gold.harness_export import dataset_card
from evaluation.echomind.models import Delivery, Question
from evaluation.echomind.transfer import original_or_audio
from webapp.lib.jsonlines import json_line

if TYPE_CHECKING:
    import datasets

PARQUET_NAME = "data/test-00000-of-00001.parquet"


def echomind_features() -> datasets.Features:
    import datasets

    text = datasets.Value("string")
    return datasets.Features(
        {
            "case_id": text,
            "script_type": text,
            "topic": text,
            "text": text,
            "attribute": text,
            "role": text,
            "delivery_attribute": text,
            "audio": datasets.Audio(sampling_rate=16_000, decode=False),
            "questions": datasets.List(
                {
                    "question_id": text,
                    "level": text,
                    "type": text,
                    "question": text,
                    "options": datasets.List(text),
                    "answer": text,
                }
            ),
        }
    )


def echomind_rows() -> dict[str, list[dict[str, Any]]]:
    """Return each script type's rows, a delivery each, in case and role order."""
    questions: dict[int, list[dict[str, Any]]] = {}
    for question in Question.objects.in_use().order_by("level", "question_id"):
        questions.setdefault(question.delivery_id, []).append(
            {
                "question_id": question.question_id,
                "level": question.level,
                "type": question.question_type,
                "question": question.text,
                "options": list(question.options),
                "answer": question.answer,
            }
        )
    rows: dict[str, list[dict[str, Any]]] = {}
    deliveries = Delivery.objects.select_related(
        "delivery_set__attribute", "attribute", "item__recording"
    ).order_by("delivery_set__case_id", "role")
    for delivery in deliveries:
        case, take = delivery.delivery_set, delivery.item.recording
        rows.setdefault(case.script_type, []).append(
            {
                "case_id": case.case_id,
                "script_type": case.script_type,
                "topic": case.topic,
                "text": case.text,
                "attribute": case.attribute.code,
                "role": delivery.role,
                "delivery_attribute": delivery.attribute.code if delivery.attribute else "",
                "audio": {"bytes": original_or_audio(take), "path": delivery.audio_name()} if take else None,
                "questions": questions.get(delivery.pk, []),
            }
        )
    return rows


def export_echomind_sets(folder: Path) -> list[Path]:
    """Write one dataset folder per EchoMind set under `folder`; return the folders."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = echomind_features()
    written = []
    for script_type, rows in sorted(echomind_rows().items()):
        target = folder / f"echomind-{script_type}"
        table = pa.Table.from_pylist(rows, schema=features.arrow_schema)
        datasets.DatasetDict({"test": datasets.Dataset(table)}).save_to_disk(str(target))
        (target / "data").mkdir(exist_ok=True)
        pq.write_table(table, target / PARQUET_NAME)
        (target / "README.md").write_text(
            dataset_card(
                f"EchoMind: {script_type}",
                f"The {script_type} cases of EchoMind: each delivery (target, neutral, alternative) "
                "with its accepted audio (WAV bytes) and its understanding and reasoning questions, "
                f"exported from EchoStudio. The same rows are in `{PARQUET_NAME}`.",
                ["test"],
            ),
            encoding="utf-8",
        )
        written.append(target)
    return written


def voicebench_name(script_type: str) -> str:
    """Return the VoiceBench-style JSONL's file name of one EchoMind set."""
    return f"echomind-{script_type}.jsonl"


def write_echomind_voicebench(folder: Path) -> dict[str, int]:
    """Write each EchoMind set as a VoiceBench-style JSONL a harness runs directly (one row a
    delivery with accepted audio: "prompt" its text, "audio" its file under audio/, its checksum),
    the audio beside it; return the rows per set. A harness adds "response" to each row; the file it
    writes imports back as the system's replies (`answers.import_answers`), placed by "delivery"."""
    audio_folder = folder / "audio"
    audio_folder.mkdir(parents=True, exist_ok=True)
    handles: dict[str, Any] = {}
    counts: dict[str, int] = {}
    deliveries = (
        Delivery.objects.select_related("delivery_set__attribute", "item__recording")
        .filter(item__recording__isnull=False)
        .order_by("delivery_set__case_id", "role")
    )
    try:
        for delivery in deliveries:
            case, take = delivery.delivery_set, delivery.item.recording
            assert take is not None  # filtered above
            data = original_or_audio(take)
            name = delivery.audio_name()
            (audio_folder / name).write_bytes(data)
            if case.script_type not in handles:
                handles[case.script_type] = (folder / voicebench_name(case.script_type)).open(
                    "w", encoding="utf-8"
                )
            handles[case.script_type].write(
                json_line(
                    {
                        "delivery": name,
                        "case_id": case.case_id,
                        "script_type": case.script_type,
                        "role": delivery.role,
                        "prompt": case.text,
                        "prompt_strength": "none",
                        "audio": f"audio/{name}",
                        "audio_sha256": hashlib.sha256(data).hexdigest(),
                    }
                )
            )
            counts[case.script_type] = counts.get(case.script_type, 0) + 1
    finally:
        for handle in handles.values():
            handle.close()
    return counts
