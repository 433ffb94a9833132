"""Items with real recorded audio, complete label documents, and annotations at any stage."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from annotation.labelling import workflows as labelling
from annotation.labelling.models import Annotation
from annotation.recording.models import Item, Take
from tests.annotation.audio.audio_corpus import glide, harmonic_tone, wav_of
from webapp.models import User
from webapp.storage import new_media_key, save_media

SCRIPT = "Oh great, another Monday. I just love waiting in the rain."


@cache
def speech_like_wav() -> bytes:
    """Return 1.5 s of a voice-like tone gliding 220 -> 260 -> 180 Hz as 16 kHz mono 16-bit WAV."""
    return wav_of(harmonic_tone(glide(220.0, 260.0, 180.0, seconds=1.5)))


def display_contours() -> dict[str, Any]:
    """Return contours shaped like acoustics.contours_for_display: falling pitch with an unvoiced gap."""
    times = [round(0.02 * step, 2) for step in range(75)]
    hz = [None if 30 <= step < 36 else round(250.0 - 60.0 * step / 74, 1) for step in range(75)]
    db = [round(60.0 + 8.0 * (1 - abs(step - 37) / 37), 1) for step in range(75)]
    return {"pitch": {"times": times, "hz": hz}, "intensity": {"times": times, "db": db}}


def make_item(
    external_id: str = "EE-0001",
    *,
    text: str = SCRIPT,
    scenario: str = "modality-conflict",
    state: str = Item.State.RECORDED,
    with_audio: bool = True,
) -> Item:
    """Create an item; with audio, an accepted take carrying features and display contours."""
    item = Item.objects.create(
        external_id=external_id, text=text, scenario=scenario, target_emotion="angry", state=state
    )
    if with_audio:
        actor, _ = User.objects.get_or_create(username="performer")
        key = save_media(new_media_key("take", "wav"), speech_like_wav())
        take = Take.objects.create(
            item=item,
            actor=actor,
            status=Take.Status.ACCEPTED,
            audio_key=key,
            original_key=key,
            duration_seconds=1.5,
            features={
                "pitch_level": "high",
                "energy_level": "normal",
                "rate_level": "low",
                "intonation": "falling",
            },
            contours=display_contours(),
        )
        item.recording = take
        item.save(update_fields=["recording"])
    return item


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
    annotations = [Annotation.objects.create(item=item, annotator=user) for user in users]
    Item.objects.filter(pk=item.pk).update(state=Item.State.ANNOTATING)
    item.refresh_from_db()
    return annotations


def submitted(annotation: Annotation, **labels: dict[str, Any]) -> Annotation:
    """Open and submit an annotation with complete labels (overridable per document)."""
    opened = labelling.open_annotation(annotation)
    return labelling.submit_annotation(
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
