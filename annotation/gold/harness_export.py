"""EchoEval sent out to the tools labs already run: a `datasets.load_from_disk` folder, and a
VoiceBench-style JSONL a harness runs as it is.

- ``hf/``: the gold export's parquet splits (`annotation.gold.export`) saved as a
  ``datasets.DatasetDict`` (``dataset_dict.json``, one Arrow folder a split), with the same
  features (audio as WAV bytes) and a dataset card naming the licence.
- ``voicebench/echoeval.jsonl`` with ``voicebench/audio/<id>.wav``: one row an item with an accepted
  take, in VoiceBench's dataset fields (``prompt``: the script, ``audio``: the WAV, relative to the
  file) plus ``item_id`` and ``audio_sha256``. VoiceBench's ``main.py`` copies every field but
  ``audio`` into its result rows and adds ``response``, so the result file imports back as it is
  (`evaluation.outputs.harnesses`, format "voicebench"), each row placed by its ``item_id``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.conf import settings

from annotation.gold.export import PARQUET_FOLDER, audio_file_name, gold_features, gold_items
from webapp.lib.jsonlines import json_line
from webapp.models import User
from webapp.storage import read_media

HF_FOLDER = "hf"
VOICEBENCH_FOLDER = "voicebench"
VOICEBENCH_NAME = "echoeval.jsonl"


def dataset_card(title: str, description: str, splits: list[str]) -> str:
    """Return a Hugging Face dataset card: licence and splits in its front matter, then prose."""
    split_lines = "".join(f"- {name}\n" for name in splits)
    return (
        f"---\nlicense: {settings.ECHOEVAL_LICENSE}\nsplits:\n{split_lines}---\n\n# {title}\n\n{description}\n\n"
        f"Licence: {settings.ECHOEVAL_LICENSE}. Load with `datasets.load_from_disk(folder)`.\n"
    )


def save_hf_disk(parquet_folder: Path, target: Path) -> list[str]:
    """Save the gold export's parquet splits under `parquet_folder` as a `load_from_disk` folder;
    return the splits written."""
    import datasets
    import pyarrow.parquet as pq

    features = gold_features()
    splits = {
        path.name.split("-", 1)[0]: datasets.Dataset(pq.read_table(path, schema=features.arrow_schema))
        for path in sorted((parquet_folder / PARQUET_FOLDER).glob("*.parquet"))
    }
    datasets.DatasetDict(splits).save_to_disk(str(target))
    (target / "README.md").write_text(
        dataset_card(
            "EchoEval",
            "EchoEval items with their accepted audio (16 kHz mono WAV), adjudicated perception and "
            "Theory-of-Mind gold, each annotator's submitted labels and the item's split, exported "
            "from EchoStudio.",
            sorted(splits),
        ),
        encoding="utf-8",
    )
    return sorted(splits)


def write_voicebench(
    folder: Path, *, scenario: str | None = None, split: str | None = None, viewer: User | None = None
) -> int:
    """Write the VoiceBench-style JSONL of the items with an accepted take; return its rows."""
    audio_folder = folder / "audio"
    audio_folder.mkdir(parents=True, exist_ok=True)
    count = 0
    items = gold_items(scenario, split, viewer=viewer).filter(recording__isnull=False)
    with (folder / VOICEBENCH_NAME).open("w", encoding="utf-8") as handle:
        for item in items.iterator(chunk_size=200):
            assert item.recording is not None  # filtered above
            data = read_media(item.recording.audio_key)
            name = audio_file_name(item.external_id)
            (audio_folder / name).write_bytes(data)
            handle.write(
                json_line(
                    {
                        "item_id": item.external_id,
                        "prompt": item.text,
                        "audio": f"audio/{name}",
                        "audio_sha256": hashlib.sha256(data).hexdigest(),
                        "split": item.split,
                        "scenario": item.scenario,
                    }
                )
            )
            count += 1
    return count
