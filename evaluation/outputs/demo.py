"""Demo systems with imported outputs for the recorded demo items, ready for a judge run."""

from __future__ import annotations

import json

from annotation.demo.recording import DEMO_ITEMS, RECORDED_IDS
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import System
from webapp.lib.output_format import render_output, render_reasoning, render_strategy

DEMO_VERSION = "echoeval-v1"


def seed_demo_outputs() -> int:
    """Create two demo systems and import their outputs; return how many outputs exist."""
    structured, plain = [], []
    for demo in DEMO_ITEMS:
        if demo.external_id not in RECORDED_IDS:
            continue
        feeling = demo.variant or demo.emotion
        structured.append(
            {
                "item_id": demo.external_id,
                "output": render_output(
                    f"The voice sounds {feeling}, {demo.intensity} intensity. {demo.instructions}",
                    render_reasoning(
                        f"Something left the speaker feeling {feeling}.",
                        "To be understood.",
                        "Acknowledgement first.",
                        "Avoid premature problem-solving.",
                    ),
                    render_strategy(["Emotional validation", "Reflection of feelings"], "calm"),
                    f"It sounds like that left you feeling {feeling}. I'm here; do you want to tell me more?",
                ),
            }
        )
        plain.append(
            {"item_id": demo.external_id, "output": "Here are five tips to feel better: sleep, exercise…"}
        )
    total = 0
    for name, category, rows in (
        ("EchoChat (demo)", System.Category.OURS, structured),
        ("Generic speech LLM (demo)", System.Category.GENERAL, plain),
    ):
        system, _ = System.objects.get_or_create(
            name=name, defaults={"category": category, "text_only": True, "version": "demo"}
        )
        jsonl = "\n".join(json.dumps(row) for row in rows).encode()
        import_outputs(system, DEMO_VERSION, jsonl, None)
        total += system.outputs.count()
    return total
