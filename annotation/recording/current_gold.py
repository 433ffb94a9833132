"""Current gold, for the workflows before gold in the pipeline.

Recording, dialogues and labelling show an earlier turn's gold reply or perception, but gold
(`annotation.gold`) comes after them and may not be imported there; a `gold_references__...`
lookup would reach its table behind the import linter's back and copy its "current" rule
(tests/test_cross_layer_lookups.py forbids that). So gold registers its one reader,
`GoldReference.objects.current_by_item`, here when its models load, and these layers ask through
`current_gold_by_item`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CurrentGold:
    """What the earlier layers may know of an item's current gold."""

    reference_response: str
    perception: dict[str, Any] = field(default_factory=dict)


GoldReader = Callable[[list[int]], dict[int, CurrentGold]]
_reader: GoldReader | None = None


def register_current_gold_reader(reader: GoldReader) -> None:
    """Gold's models call this once, at import (Django imports every model before serving)."""
    global _reader
    _reader = reader


def current_gold_by_item(item_ids: Iterable[int]) -> dict[int, CurrentGold]:
    """Return {item id: its current gold} for the items that have gold (one query)."""
    if _reader is None:
        raise RuntimeError("annotation.gold.models is not loaded: Django's app registry loads it")
    ids = list(item_ids)
    return _reader(ids) if ids else {}
