"""Training and inference data from the studio: which items are ready, snapshots of them, and their records.

An item is ready for training when its accepted recording exists and it has a current gold
reference; SFT and reward-model training also need the gold's reference response (the response
span, and the top rung of the reward ladder). Inference needs only the accepted recording. A
dialogue turn also needs every earlier turn recorded: its entry names them, and its record
carries them as history (``ml.jobs.dialogues.history``).

A snapshot freezes the choice when a job starts: the item, the accepted take and the gold
reference row of each entry. Gold references are versioned rows (a new adjudication adds a row
and makes it current), so the snapshot's rows stay readable however the gold moves on.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation.gold.models import GoldReference
from annotation.labelling.models import Strategy
from annotation.recording.consent.models import MODEL_TRAINING, RESEARCH_EVALUATION, TakeUse, record_uses
from annotation.recording.models import Item, ItemQuerySet, Split, Take
from ml.core.training_records import (
    MANIFEST_FILE,
    RecordAudio,
    TrainingRecord,
    export_records,
    read_wav,
    record_from_gold,
)
from ml.jobs.builds.sources import build_records
from ml.jobs.dialogues.history import (
    EXCLUDED_EARLIER_TURN_UNRECORDED,
    history_entries,
    history_rows,
    missing_history,
    with_history,
)
from ml.jobs.models import DatasetSnapshot
from webapp.storage import read_media

Purpose = DatasetSnapshot.Purpose
NEEDS_GOLD = frozenset({Purpose.SFT, Purpose.RL, Purpose.REWARD})
NEEDS_REFERENCE_RESPONSE = frozenset({Purpose.SFT, Purpose.REWARD})

EXCLUDED_NO_GOLD = "no current gold reference"
EXCLUDED_ARCHIVED = "archived (the item or its recording), not counted"
EXCLUDED_NO_RESPONSE = "gold has no reference response"
EXCLUDED_NO_CONSENT = "a recording its speaker does not allow for this use"


class EmptyDataset(ValueError):
    """No item of the chosen splits is ready for this purpose."""


class SnapshotUnreadable(RuntimeError):
    """A row the snapshot names has been deleted since it was taken."""


def consent_scope(purpose: str) -> str:
    """Return the consent a snapshot for ``purpose`` needs of its takes' actors: model training
    for the training purposes, research evaluation for inference."""
    return RESEARCH_EVALUATION if purpose == Purpose.INFERENCE else MODEL_TRAINING


def _recorded(splits: list[str]) -> ItemQuerySet:
    return Item.objects.filter(
        split__in=splits, recording__isnull=False, recording__status=Take.Status.ACCEPTED
    )


def _recorded_items(splits: list[str], scope: str) -> tuple[list[Item], int, int]:
    """Return the items in use with an accepted recording consented for ``scope``, how many
    recorded items were left out as archived (`ArchivableQuerySet.in_use`), and how many for want
    of consent (`TakeQuerySet.consented_for`)."""
    recorded = _recorded(splits)
    in_use = recorded.in_use("recording")
    items = list(
        in_use.filter(recording__in=Take.objects.consented_for(scope).values("pk"))
        .select_related("dialogue")
        .order_by("external_id")
    )
    n_in_use = in_use.count()
    return items, recorded.count() - n_in_use, n_in_use - len(items)


def ready_entries(purpose: str, splits: list[str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Return the snapshot entries of the items ready for ``purpose``, and why others were left out."""
    items, archived, unconsented = _recorded_items(splits, consent_scope(purpose))
    golds = GoldReference.objects.only("id", "item_id", "reference_response").current_by_item(items)
    histories = history_entries(items)
    entries: list[dict[str, Any]] = []
    excluded: Counter[str] = Counter()
    if unconsented:
        excluded[EXCLUDED_NO_CONSENT] = unconsented
    if archived:
        excluded[EXCLUDED_ARCHIVED] = archived
    for item in items:
        gold = golds.get(item.pk)
        if item.pk in histories and histories[item.pk] is None:
            excluded[EXCLUDED_EARLIER_TURN_UNRECORDED] += 1
            continue
        if purpose in NEEDS_GOLD and gold is None:
            excluded[EXCLUDED_NO_GOLD] += 1
            continue
        if purpose in NEEDS_REFERENCE_RESPONSE and gold is not None and not gold.reference_response.strip():
            excluded[EXCLUDED_NO_RESPONSE] += 1
            continue
        entry: dict[str, Any] = {
            "item": item.pk,
            "external_id": item.external_id,
            "take": item.recording_id,
            "gold": gold.pk if gold is not None and purpose in NEEDS_GOLD else None,
        }
        if item.dialogue is not None:
            entry.update(dialogue=item.dialogue.external_id, turn=item.turn, history=histories[item.pk])
        entries.append(entry)
    return entries, dict(excluded)


def ready_counts(purpose: str) -> dict[str, int]:
    """Return {split: number of items ready for ``purpose``} for every EchoEval split."""
    return {split: len(ready_entries(purpose, [split])[0]) for split, _ in Split.echoeval_choices()}


def entries_hash(entries: list[dict[str, Any]]) -> str:
    """Return the sha256 identifying a snapshot's rows (item, take and gold of every entry, and
    of a dialogue turn's earlier turns)."""
    canonical = json.dumps(
        sorted(
            [entry["item"], entry["take"], entry["gold"], *(list(row) for row in history_rows(entry))]
            for entry in entries
        ),
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def create_snapshot(purpose: str, splits: list[str]) -> DatasetSnapshot:
    """Freeze the items ready for ``purpose`` in ``splits``; raise EmptyDataset when there are none."""
    entries, excluded = ready_entries(purpose, splits)
    if not entries:
        reasons = ", ".join(f"{count} with {reason}" for reason, count in excluded.items())
        raise EmptyDataset(
            f"No item of the {'/'.join(splits)} split(s) is ready for "
            f"{Purpose(purpose).label.lower()}: it needs an accepted recording"
            + (" and a current gold reference" if purpose in NEEDS_GOLD else "")
            + (" with a reference response" if purpose in NEEDS_REFERENCE_RESPONSE else "")
            + (f" ({reasons})." if reasons else ".")
        )
    with transaction.atomic():
        snapshot = DatasetSnapshot.objects.create(
            purpose=purpose,
            splits=list(splits),
            entries=entries,
            item_ids=[entry["item"] for entry in entries],
            gold_reference_ids=[entry["gold"] for entry in entries if entry["gold"] is not None],
            content_hash=entries_hash(entries),
            excluded=excluded,
        )
        # The lineage manifest: every take the snapshot holds, earlier dialogue turns' included.
        record_uses(TakeUse.SNAPSHOT, snapshot.pk, snapshot_take_ids(entries))
    return snapshot


def snapshot_take_ids(entries: list[dict[str, Any]]) -> list[int]:
    """Return the takes a snapshot's entries use: each entry's, and its earlier turns'."""
    return [entry["take"] for entry in entries] + [row[1] for entry in entries for row in history_rows(entry)]


def snapshot_records(snapshot: DatasetSnapshot) -> list[RecordAudio]:
    """Return the snapshot's records with their audio, in entry order."""
    if snapshot.build_id is not None:
        return build_records(snapshot)  # a build's export: the records as the builder wrote them
    return list(iter_snapshot_records(snapshot))


def iter_snapshot_records(snapshot: DatasetSnapshot) -> Iterator[RecordAudio]:
    """Return the studio snapshot's records one at a time, in entry order: each record's audio is
    read when it is reached, so an export of 400K items holds one record's audio at a time.
    A row deleted since the snapshot raises ``SnapshotUnreadable`` here, before any is read."""
    entries: list[dict[str, Any]] = snapshot.entries
    items = Item.objects.in_bulk([entry["item"] for entry in entries])
    takes = Take.objects.in_bulk([entry["take"] for entry in entries])
    golds = GoldReference.objects.in_bulk([entry["gold"] for entry in entries if entry["gold"] is not None])
    broken_history, history_items, history_takes, history_golds = missing_history(entries)
    missing = [
        entry["external_id"]
        for entry in entries
        if entry["item"] not in items
        or entry["take"] not in takes
        or (entry["gold"] is not None and entry["gold"] not in golds)
        or entry["item"] in broken_history
    ]
    if missing:
        raise SnapshotUnreadable(
            f"snapshot #{snapshot.pk} names rows deleted since it was taken (items {', '.join(missing[:10])})"
        )
    names_by_slug = dict(Strategy.objects.values_list("slug", "name"))
    history = (history_items, history_takes, history_golds)
    return (_entry_record(entry, items, takes, golds, names_by_slug, history) for entry in entries)


def _entry_record(
    entry: dict[str, Any],
    items: dict[Any, Item],
    takes: dict[Any, Take],
    golds: dict[Any, GoldReference],
    names_by_slug: dict[str, str],
    history: tuple[Any, Any, Any],
) -> RecordAudio:
    """Return one snapshot entry's record with its audio (and its earlier turns')."""
    item, take = items[entry["item"]], takes[entry["take"]]
    audio, sample_rate = read_wav(read_media(take.audio_key))
    gold = golds.get(entry["gold"]) if entry["gold"] is not None else None
    if gold is None:
        record = TrainingRecord(
            item_id=item.external_id,
            audio_path="",
            scenario=item.scenario,
            emotion=item.target_emotion,
            perception="",
            reasoning="",
            strategies=(),
            speech_style="",
            response="",
            text=item.text,
        )
    else:
        record = record_from_gold(
            item.external_id,
            item.text,
            item.scenario,
            item.target_emotion,
            gold.perception,
            gold.tom,
            gold.reference_response,
            names_by_slug,
        )
    row = RecordAudio(record=record, audio=audio, sample_rate=sample_rate)
    return with_history(row, entry, *history)


def export_snapshot(snapshot: DatasetSnapshot, folder: Path, *, records_format: str = "jsonl") -> Path:
    """Write the snapshot as a dataset export for ``python -m ml.cli``; return the records file's
    path (records.jsonl, or records.arrow with ``records_format="arrow"``)."""
    rows = build_records(snapshot) if snapshot.build_id is not None else iter_snapshot_records(snapshot)
    records_file = export_records(rows, folder, records_format=records_format)
    manifest = {
        "snapshot": str(snapshot.pk),
        "purpose": snapshot.purpose,
        "splits": snapshot.splits,
        "content_hash": snapshot.content_hash,
        "items": len(snapshot.entries),
        "created_at": snapshot.created_at.isoformat(),
    }
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2))
    return records_file
