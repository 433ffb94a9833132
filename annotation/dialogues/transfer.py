"""Import and export dialogues as JSONL (one dialogue per line), all or nothing like items.

A dialogue already in the studio may be imported again while none of its turns has a take: its
turns are replaced. Once an actor has recorded any turn, its script is fixed, as an item's is.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Prefetch, ProtectedError, QuerySet

from annotation.dialogues.records import LINE, TURN_KEYS, DialogueRecord, dialogue_line, parse_dialogues
from annotation.recording.item_import import RowError
from annotation.recording.models import Dialogue, Item, Take

EXPORTED_TURN_FIELDS = TURN_KEYS


@dataclass(frozen=True)
class DialogueImportReport:
    lines_read: int
    created: int = 0
    replaced: int = 0
    unchanged: int = 0
    errors: list[RowError] = field(default_factory=list)
    imported: bool = False  # False: the file was refused and nothing was written

    def as_result(self, shown: int = 200) -> dict[str, object]:
        return {
            "lines_read": self.lines_read,
            "created": self.created,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "imported": self.imported,
            "errors": [str(error) for error in self.errors[:shown]],
        }


def import_dialogues(source: BinaryIO | bytes, *, max_turns: int | None = None) -> DialogueImportReport:
    """Create or replace dialogues (and their turn items) from JSONL; with any problem, write nothing."""
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    limit = max_turns if max_turns is not None else settings.DIALOGUE_MAX_TURNS
    parsed = parse_dialogues(stream, max_turns=limit)
    if parsed.errors:
        return DialogueImportReport(parsed.lines_read, errors=sorted(parsed.errors, key=lambda e: e.row))
    try:
        with transaction.atomic():
            errors = _conflicts(parsed.dialogues)
            if errors:
                return DialogueImportReport(parsed.lines_read, errors=errors)
            created = replaced = unchanged = 0
            existing = {
                dialogue.external_id: dialogue
                for dialogue in Dialogue.objects.select_for_update()
                .filter(external_id__in=[record.dialogue_id for record in parsed.dialogues])
                .prefetch_related(Prefetch("turns", queryset=Item.objects.order_by("turn")))
            }
            for record in parsed.dialogues:
                dialogue = existing.get(record.dialogue_id)
                if dialogue is not None and _same(dialogue, record):
                    unchanged += 1
                    continue
                if dialogue is None:
                    dialogue = Dialogue.objects.create(
                        external_id=record.dialogue_id,
                        split=record.split,
                        topic=record.topic,
                        voice=record.voice,
                    )
                    created += 1
                else:
                    dialogue.turns.all().delete()
                    dialogue.split, dialogue.topic, dialogue.voice = record.split, record.topic, record.voice
                    dialogue.save(update_fields=["split", "topic", "voice"])
                    replaced += 1
                Item.objects.bulk_create(
                    Item(dialogue=dialogue, turn=turn.turn, **turn.values) for turn in record.turns
                )
    except ProtectedError as kept:
        # A turn someone recorded, labelled or answered is work: the dialogue is not replaced.
        turns = sorted({str(getattr(work, "item", "")) for work in kept.protected_objects} - {""})
        message = (
            f"Turns {', '.join(turns[:10])} already have recorded or labelled work, so their dialogue was not "
            "replaced and nothing was imported (archive those items, then import the dialogue under a new id)."
        )
        return DialogueImportReport(parsed.lines_read, errors=[RowError(0, "", message)])
    except IntegrityError:
        message = "Another import created some of these dialogues at the same moment; import the file again."
        return DialogueImportReport(parsed.lines_read, errors=[RowError(0, "", message)])
    return DialogueImportReport(
        parsed.lines_read, created=created, replaced=replaced, unchanged=unchanged, imported=True
    )


def _conflicts(records: list[DialogueRecord]) -> list[RowError]:
    """Return the problems only the database can show: turn ids taken by other items, recorded turns."""
    ids = [record.dialogue_id for record in records]
    recorded = set(
        Take.objects.filter(item__dialogue__external_id__in=ids).values_list(
            "item__dialogue__external_id", flat=True
        )
    )
    turn_ids = {turn.values["external_id"]: record for record in records for turn in record.turns}
    taken = (
        Item.objects.filter(external_id__in=list(turn_ids))
        .exclude(dialogue__external_id__in=ids)
        .values_list("external_id", flat=True)
    )
    errors = [
        RowError(
            record.line,
            "dialogue_id",
            f"{record.dialogue_id} is already being recorded; its turns can no longer change.",
            LINE,
        )
        for record in records
        if record.dialogue_id in recorded
    ]
    errors += [
        RowError(
            turn_ids[external_id].line,
            "turns",
            f"the turn id {external_id} is already used by another item.",
            LINE,
        )
        for external_id in taken
    ]
    return sorted(errors, key=lambda error: error.row)


def _same(dialogue: Dialogue, record: DialogueRecord) -> bool:
    turns = list(dialogue.turns.all())
    return (
        (dialogue.split, dialogue.topic, dialogue.voice) == (record.split, record.topic, record.voice)
        and len(turns) == len(record.turns)
        and all(
            all(getattr(item, name) == value for name, value in turn.values.items())
            for item, turn in zip(turns, record.turns, strict=True)
        )
    )


def dialogue_document(dialogue: Dialogue, turns: Iterable[Item]) -> dict[str, object]:
    """Return a dialogue as its import shape (the turns' scripts and the planned trajectory)."""
    return {
        "dialogue_id": dialogue.external_id,
        "split": dialogue.split,
        "topic": dialogue.topic,
        "voice": dialogue.voice,
        "turns": [{name: getattr(item, name) for name in EXPORTED_TURN_FIELDS} for item in turns],
    }


def export_dialogues(dialogues: QuerySet[Dialogue] | None = None, *, batch: int = 500) -> Iterator[str]:
    """Yield one JSONL line per dialogue (streamed in batches), in id order."""
    chosen = (dialogues if dialogues is not None else Dialogue.objects.all()).order_by("external_id")
    turns = Prefetch("turns", queryset=Item.objects.order_by("turn"))
    for dialogue in chosen.prefetch_related(turns).iterator(chunk_size=batch):
        yield dialogue_line(dialogue_document(dialogue, dialogue.turns.all())) + "\n"
