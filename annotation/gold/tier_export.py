"""Takes' tiers leave as Praat TextGrids or ELAN .eaf files, one item or all at once (a zip).

Each file holds the accepted take's aligned words (its speech check, `annotation.audio.speech`)
and the labels of its current gold (stressed words, intonation, emotion-shift regions) as tiers
(`annotation.labelling.tier_labels`); an item without gold leaves with its words alone. Gold a
reader may not see (an item they are still labelling, `gold.access.gold_hidden_from`) is left out.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from typing import Any

from annotation.audio.speech.tiers import Interval, TierSet, write_eaf, write_textgrid
from annotation.gold.access import gold_hidden_from
from annotation.gold.export import audio_file_name
from annotation.gold.models import GoldReference
from annotation.labelling.schema import normalise_perception
from annotation.labelling.tier_labels import take_tiers
from annotation.recording.models import Item
from webapp.lib.archives import archive_member
from webapp.models import User

FORMATS = {"textgrid": ".TextGrid", "eaf": ".eaf"}


def take_words(qc: Mapping[str, Any]) -> list[Interval]:
    """Return the aligned words a take's speech check stored (none before it ran)."""
    speech = qc.get("speech") if qc else None
    words = speech.get("words") if isinstance(speech, Mapping) else None
    return [
        Interval(float(word["start"]), float(word["end"]), str(word["text"]))
        for word in words or []
        if isinstance(word, Mapping)
        and isinstance(word.get("start"), int | float)
        and isinstance(word.get("end"), int | float)
    ]


def item_tiers(item: Item, gold: GoldReference | None) -> TierSet | None:
    """Return the item's take's tiers with its gold labels (None: the item has no accepted take)."""
    take = item.recording
    if take is None:
        return None
    perception = normalise_perception(gold.perception) if gold is not None else {}
    return take_tiers(take.duration_seconds, take_words(take.qc), perception)


def tier_file(item: Item, tiers: TierSet, format_name: str) -> tuple[str, bytes]:
    """Return the file name and bytes of an item's tiers in `format_name` (textgrid or eaf)."""
    stem = audio_file_name(item.external_id).removesuffix(".wav")
    data = write_textgrid(tiers) if format_name == "textgrid" else write_eaf(tiers, f"{stem}.wav")
    return stem + FORMATS[format_name], data


def tiers_zip(format_name: str, viewer: User) -> tuple[bytes, int]:
    """Return a zip of every item's tier file (gold the viewer may not see left out) and its count."""
    hidden = set(gold_hidden_from(viewer).values_list("item_id", flat=True))
    golds = {gold.item_id: gold for gold in GoldReference.objects.current()}
    buffer = io.BytesIO()
    count = 0
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        items = Item.objects.filter(recording__isnull=False).select_related("recording")
        for item in items.iterator(chunk_size=200):
            tiers = item_tiers(item, None if item.pk in hidden else golds.get(item.pk))
            if tiers is None:
                continue
            name, data = tier_file(item, tiers, format_name)
            archive.writestr(archive_member(name), data)
            count += 1
    return buffer.getvalue(), count
