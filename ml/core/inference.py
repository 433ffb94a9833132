"""Batch inference: EchoChat (or any registered speech LM) answers recorded items.

Each output keeps the raw text and its parse into perception / reasoning / strategy / response
spans, so evaluation can store the spans and judge them stage by stage. ``should_cancel()`` is
polled before every batch; a cancelled run returns the outputs finished so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ml.core.config import INFERENCE_BATCH_SIZE, INFERENCE_MAX_NEW_TOKENS
from ml.core.loop import CancelCheck, ProgressCallback
from ml.core.speech.inputs import resample
from ml.core.speech.model import SpeechLM
from webapp.lib.output_format import ParsedOutput, parse_output


@dataclass(frozen=True)
class InferenceItem:
    item_id: str
    audio: np.ndarray
    sample_rate: int
    prompt: str


@dataclass(frozen=True)
class InferenceOutput:
    item_id: str
    raw_text: str
    parsed: ParsedOutput

    def span_texts(self) -> dict[str, str]:
        """Return {span name: text} for the spans found (e.g. to store on a model output row)."""
        return {name: span.text for name, span in self.parsed.spans().items()}


def run_inference(
    speech_lm: SpeechLM,
    items: Sequence[InferenceItem],
    max_new_tokens: int = INFERENCE_MAX_NEW_TOKENS,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
    batch_size: int = INFERENCE_BATCH_SIZE,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> list[InferenceOutput]:
    """Return one output per item, in item order (fewer when cancelled)."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    outputs: list[InferenceOutput] = []
    for start in range(0, len(items), batch_size):
        if should_cancel is not None and should_cancel():
            break
        chunk = items[start : start + batch_size]
        texts = speech_lm.generate_batch(
            [(resample(item.audio, item.sample_rate), item.prompt) for item in chunk],
            max_new_tokens=max_new_tokens,
            do_sample=do_sample,
            temperature=temperature,
            top_p=top_p,
        )
        for item, (text,) in zip(chunk, texts, strict=True):
            outputs.append(InferenceOutput(item_id=item.item_id, raw_text=text, parsed=parse_output(text)))
        if on_progress is not None:
            well_formed = sum(output.parsed.well_formed for output in outputs)
            on_progress(
                len(outputs) / len(items),
                f"{len(outputs)}/{len(items)} items",
                {"done": float(len(outputs)), "well_formed_fraction": well_formed / len(outputs)},
            )
    return outputs
