"""The labelling tests' item (real recorded audio), complete label documents, annotations at any stage."""

from __future__ import annotations

import json
from typing import Any

import factory

from annotation.labelling import workflows
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.factories import AnnotationFactory, RecordedItemFactory
from webapp.lib import vocabulary
from webapp.models import User

SCRIPT = "Oh great, another Monday. I just love waiting in the rain."


def display_contours() -> dict[str, Any]:
    """Return contours shaped like acoustics.contours_for_display: falling pitch with an unvoiced gap."""
    times = [round(0.02 * step, 2) for step in range(75)]
    hz = [None if 30 <= step < 36 else round(250.0 - 60.0 * step / 74, 1) for step in range(75)]
    db = [round(60.0 + 8.0 * (1 - abs(step - 37) / 37), 1) for step in range(75)]
    return {"pitch": {"times": times, "hz": hz}, "intensity": {"times": times, "db": db}}


class LabellingItemFactory(RecordedItemFactory):
    """The sarcastic SCRIPT, recorded; its accepted take (``speech_like_wav``) carries prosody
    features and display contours, as analysis leaves them. ``recording=None``: no audio."""

    text = SCRIPT
    scenario = vocabulary.MODALITY_CONFLICT
    target_emotion = vocabulary.ANGRY
    emotion_variant = ""
    instructions = ""
    recording__duration_seconds = 1.5
    recording__features = factory.LazyFunction(
        lambda: {
            "pitch_level": "high",
            "energy_level": "normal",
            "rate_level": "low",
            "intonation": "falling",
        }
    )
    recording__contours = factory.LazyFunction(display_contours)


def perception(**overrides: Any) -> dict[str, Any]:
    """Return a complete perception document for SCRIPT."""
    document: dict[str, Any] = {
        "polarity": "negative",
        "emotion": "angry",
        "emotion_variant": "irritation",
        "intensity": "medium",
        "pitch": "high",
        "energy": "normal",
        "rate": "low",
        "stressed_words": ["great", "love"],
        "intonation": "falling",
        "prosody_caption": "flat, drawn-out delivery with heavy stress on 'great'",
        "situation": "Dreading a wet Monday commute",
        "modality_conflict": True,
        "conflict_kind": "sarcasm",
        "emotion_segments": [],
    }
    document.update(overrides)
    return document


def tom(**overrides: Any) -> dict[str, Any]:
    """Return a complete ToM document."""
    document: dict[str, Any] = {
        "context": "Sarcastic complaint about the start of the week",
        "latent_need": "To have the frustration acknowledged",
        "core_demand": "Empathy, not advice",
        "recommended_strategies": ["emotional-validation", "reflection-of-feelings"],
        "not_recommended_strategies": ["information"],
        "constraints": ["premature problem-solving"],
    }
    document.update(overrides)
    return document


def assign(item: Item, *users: User) -> list[Annotation]:
    """Assign exactly these annotators to the item (bypassing the balancing) and mark it annotating."""
    annotations = [AnnotationFactory.create(item=item, annotator=user) for user in users]
    Item.objects.filter(pk=item.pk).update(state=Item.State.ANNOTATING)
    item.refresh_from_db()
    return annotations


def submitted(annotation: Annotation, **labels: dict[str, Any]) -> Annotation:
    """Open and submit an annotation with complete labels (overridable per document)."""
    opened = workflows.open_annotation(annotation)
    return workflows.submit_annotation(
        opened.pk,
        user=opened.annotator,
        perception=labels.get("perception", perception()),
        tom=labels.get("tom", tom()),
        expected_version=opened.version,
    )


def form_data(perception_doc: dict[str, Any], tom_doc: dict[str, Any], version: int) -> dict[str, Any]:
    """Return the POST data the workbench form sends for these documents."""
    data: dict[str, Any] = {
        f"p_{name}": value for name, value in perception_doc.items() if isinstance(value, str)
    }
    if perception_doc.get("modality_conflict"):
        data["p_modality_conflict"] = "on"
    data["p_stressed_words"] = json.dumps(perception_doc.get("stressed_words", []))
    data["p_emotion_segments"] = json.dumps(perception_doc.get("emotion_segments", []))
    for name in ("context", "latent_need", "core_demand"):
        data[f"t_{name}"] = tom_doc.get(name, "")
    data["t_constraints"] = "\n".join(tom_doc.get("constraints", []))
    for slug in tom_doc.get("recommended_strategies", []):
        data[f"s_{slug}"] = "recommended"
    for slug in tom_doc.get("not_recommended_strategies", []):
        data[f"s_{slug}"] = "not_recommended"
    data["version"] = str(version)
    return data
