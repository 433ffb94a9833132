"""A recorded dialogue (each turn an item with real audio) and complete labels for its turns."""

from __future__ import annotations

from typing import Any

from annotation.labelling import workflows
from annotation.labelling.models import Annotation
from annotation.recording.models import Dialogue, Item
from tests.annotation.labelling.support import form_data
from tests.factories import DialogueFactory, RecordingFactory


def recorded_dialogue(turns: int = 3, external_id: str = "ED-0001") -> tuple[Dialogue, list[Item]]:
    """Return a dialogue whose turns each have an accepted take (real WAV bytes), first turn first."""
    dialogue = DialogueFactory.create(turns=turns, external_id=external_id)
    items = list(Item.objects.filter(dialogue=dialogue).order_by("turn"))
    for item in items:
        RecordingFactory.create(item=item, duration_seconds=1.5)  # speech_like_wav's length
        Item.objects.filter(pk=item.pk).update(state=Item.State.RECORDED)
        item.refresh_from_db()
    return dialogue, items


def turn_perception(**overrides: Any) -> dict[str, Any]:
    """Return a complete perception document for a dialogue turn's script ("Turn n of what happened...")."""
    document: dict[str, Any] = {
        "polarity": "negative",
        "emotion": "fear",
        "emotion_variant": "worry",
        "intensity": "high",
        "pitch": "high",
        "energy": "normal",
        "rate": "normal",
        "stressed_words": ["lost"],
        "intonation": "falling",
        "prosody_caption": "tight, quick, rising worry",
        "situation": "Out of work and scared about money",
        "modality_conflict": False,
        "conflict_kind": "",
        "emotion_segments": [],
    }
    document.update(overrides)
    return document


def turn_tom(**overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "context": "Job loss, a second turn of worry",
        "latent_need": "Reassurance that it is survivable",
        "core_demand": "Calm, not a plan",
        "recommended_strategies": ["emotional-validation", "reassurance"],
        "not_recommended_strategies": ["suggestions-guidance"],
        "constraints": [],
    }
    document.update(overrides)
    return document


def cross_turn(**overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "emotion_change": "intensified",
        "emotion_change_cause": "The advice felt like being rushed",
        "last_strategy_helped": "no",
        "strategy_adaptation": "Stop advising; validate the fear first",
        "adaptation_strategies": ["emotional-validation"],
    }
    document.update(overrides)
    return document


def submit_turn(annotation: Annotation, **documents: dict[str, Any]) -> Annotation:
    """Open and submit a dialogue turn's annotation with complete labels (cross-turn ones on later turns)."""
    opened = workflows.open_annotation(annotation)
    later = (annotation.item.turn or 0) > 1
    return workflows.submit_annotation(
        opened.pk,
        user=opened.annotator,
        perception=documents.get("perception", turn_perception()),
        tom=documents.get("tom", turn_tom()),
        cross_turn=documents.get("cross_turn", cross_turn() if later else {}),
        expected_version=opened.version,
    )


def turn_form_data(version: int, **documents: dict[str, Any]) -> dict[str, Any]:
    """Return the POST data of the workbench (or adjudication) form, cross-turn fields included."""
    data = form_data(
        documents.get("perception", turn_perception()), documents.get("tom", turn_tom()), version
    )
    crossing = documents.get("cross_turn", cross_turn())
    for name in ("emotion_change", "emotion_change_cause", "last_strategy_helped", "strategy_adaptation"):
        data[f"x_{name}"] = crossing.get(name, "")
    data["x_adaptation_strategies"] = list(crossing.get("adaptation_strategies", []))
    return data
