"""Demo labels: submitted annotations on the recorded demo items, gold on some, and two demo systems.

Built with the same workflow functions people use (assign, open, submit, adjudicate, import), so
the demo shows real agreement figures, a real adjudication queue and outputs ready to be judged.
"""

from __future__ import annotations

from typing import Any

from annotation.demo.items import DEMO_ITEMS, RECORDED_IDS, DemoItem
from annotation.gold.adjudication import adjudicate_item
from annotation.gold.models import GoldReference
from annotation.labelling.assignment import assign_annotators
from annotation.labelling.models import Annotation, MachineDraft
from annotation.labelling.schema import script_words
from annotation.labelling.workflows import open_annotation, submit_annotation
from annotation.recording.models import Item
from webapp.lib.vocabulary import EMOTION_SHIFT, MODALITY_CONFLICT
from webapp.models import User

POLARITY = {"happy": "positive", "surprise": "mixed", "neutral": "neutral"}
STRATEGIES = {
    "sad": (["emotional-validation", "reflection-of-feelings"], ["information"]),
    "fear": (["reassurance", "emotional-validation"], ["self-disclosure"]),
    "angry": (["emotional-validation", "restatement"], ["cognitive-reframing"]),
    "happy": (["reflection-of-feelings", "questioning"], ["suggestions-guidance"]),
}
# How many recorded demo items get submitted annotations, and how many of those get gold (the
# train-split ones among them too, so SFT has data).
ANNOTATED, ADJUDICATED = 10, 8


def demo_perception(demo: DemoItem, item: Item, *, annotator_index: int) -> dict[str, Any]:
    """Return plausible perception labels; the third annotator hears the intensity differently."""
    words = script_words(item.text)
    intensity = demo.intensity
    if annotator_index == 2:
        intensity = {"low": "medium", "medium": "high", "high": "medium"}[demo.intensity]
    perception: dict[str, Any] = {
        "polarity": POLARITY.get(demo.emotion, "negative"),
        "emotion": demo.emotion,
        "emotion_variant": demo.variant,
        "intensity": intensity,
        "pitch": "high" if demo.pitch >= 60 else "low" if demo.pitch <= 40 else "normal",
        "energy": "high" if demo.rate_wpm >= 200 else "low" if demo.rate_wpm <= 140 else "normal",
        "rate": "high" if demo.rate_wpm >= 200 else "low" if demo.rate_wpm <= 140 else "normal",
        "stressed_words": words[:1],
        "intonation": "falling",
        "prosody_caption": demo.instructions,
        "situation": f"The speaker says: {item.text}",
        "modality_conflict": demo.scenario == MODALITY_CONFLICT,
        "conflict_kind": "sarcasm" if demo.scenario == MODALITY_CONFLICT else "",
        "emotion_segments": [],
    }
    if demo.scenario == EMOTION_SHIFT and item.recording is not None:
        middle = round(item.recording.duration_seconds / 2, 2)
        half = len(words) // 2
        perception["emotion_segments"] = [
            {"start": 0.0, "end": middle, "emotion": "happy", "words": " ".join(words[:half])},
            {
                "start": middle,
                "end": item.recording.duration_seconds,
                "emotion": demo.emotion,
                "words": " ".join(words[half:]),
            },
        ]
    return perception


def demo_tom(demo: DemoItem) -> dict[str, Any]:
    """Return plausible Theory-of-Mind labels for the item's emotion."""
    recommended, avoid = STRATEGIES.get(demo.emotion, (["emotional-validation"], ["information"]))
    return {
        "context": f"The speaker feels {demo.variant or demo.emotion} about what happened.",
        "latent_need": "To feel heard before anything else.",
        "core_demand": "Acknowledge the feeling; do not rush to fix it.",
        "recommended_strategies": recommended,
        "not_recommended_strategies": avoid,
        "constraints": ["premature problem-solving"],
    }


# The demo's drafts come from no model: they are demo_tom's fixed template (one per emotion), and
# say so wherever the workbench names a draft's source (issue 41).
DEMO_DRAFT_SOURCE = "demo draft: a fixed template per emotion, not a model"
DEMO_DRAFT_VERSION = "demo-template-v1"


def draft_from_template(item: Item, demo: DemoItem) -> None:
    """Give an item the demo's template draft of its ToM fields, once, so a demo annotator starts
    from a draft as with a configured draft endpoint (annotation.labelling.drafts)."""
    MachineDraft.objects.get_or_create(
        item=item,
        prompt_version=DEMO_DRAFT_VERSION,
        defaults={"model_name": DEMO_DRAFT_SOURCE, "tom": demo_tom(demo)},
    )


def submit_every_annotation(item: Item, demo: DemoItem, cross_turn: dict[str, Any] | None = None) -> None:
    """Submit demo labels for each annotator of the item not done yet (the third hears it differently)."""
    annotations = (
        Annotation.objects.filter(item=item).select_related("annotator").order_by("annotator__username")
    )
    for index, annotation in enumerate(annotations):
        if annotation.status == Annotation.Status.SUBMITTED:
            continue
        opened = open_annotation(annotation)
        submit_annotation(
            opened.pk,
            user=annotation.annotator,
            perception=demo_perception(demo, item, annotator_index=index),
            tom=demo_tom(demo),
            expected_version=opened.version,
            cross_turn=cross_turn,
        )


def adjudicate_demo_gold(
    item: Item,
    demo: DemoItem,
    lead: User,
    reference_response: str,
    cross_turn: dict[str, Any] | None = None,
) -> None:
    """Adjudicate the demo gold of an item that has none yet, from the first annotator's labels."""
    if GoldReference.objects.current_of(item) is not None:
        return
    adjudicate_item(
        item.pk,
        lead=lead,
        perception=demo_perception(demo, item, annotator_index=0),
        tom=demo_tom(demo),
        expected_gold_version=0,
        reference_response=reference_response,
        note="Demo gold",
        cross_turn=cross_turn,
    )


def seed_demo_labels() -> int:
    """Annotate and adjudicate the first recorded demo items; return how many items have gold."""
    lead = User.objects.get(username="lead")
    recorded = [demo for demo in DEMO_ITEMS if demo.external_id in RECORDED_IDS]
    for position, demo in enumerate(recorded):
        item = Item.objects.select_related("recording").get(external_id=demo.external_id)
        assign_annotators(item)
        if position >= ANNOTATED:
            draft_from_template(item, demo)
            continue  # left for the demo annotators to label themselves
        submit_every_annotation(item, demo)
        if position < ADJUDICATED:
            adjudicate_demo_gold(
                item,
                demo,
                lead,
                "That sounds really hard. It makes sense you feel this way; I'm here to listen.",
            )
    return Item.objects.filter(external_id__startswith="DEMO-", state=Item.State.GOLD).count()
