"""Batch inference: EchoChat (or any registered speech LM) answers recorded items.

What it returns (``InferenceOutput``) lives in ``ml.core.answers``, shared with the endpoint path.

Each output keeps the raw text and its parse into perception / reasoning / strategy / response
spans, so evaluation can store the spans and judge them stage by stage. ``should_cancel()`` is
polled before every batch; a cancelled run returns the outputs finished so far.

A dialogue is answered turn by turn (``run_dialogue_inference``): each turn hears the user audio
of the earlier turns and, after each, either the gold reply the records carry ("gold" history)
or the model's own answer to that turn ("own" history, so its mistakes carry forward).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ml.core.answers import InferenceOutput
from ml.core.config import HISTORY_GOLD, HISTORY_MODES, INFERENCE_BATCH_SIZE, INFERENCE_MAX_NEW_TOKENS
from ml.core.loop import CancelCheck, ProgressCallback
from ml.core.speech.inputs import PriorTurn, SpeechExample, resample
from ml.core.speech.model import SpeechLM
from webapp.lib.output_format import parse_output


@dataclass(frozen=True)
class InferenceItem:
    item_id: str
    audio: np.ndarray
    sample_rate: int
    prompt: str
    # A dialogue turn's earlier exchanges (user audio and the replies fed back), oldest first.
    history: tuple[PriorTurn, ...] = ()

    def speech_example(self, target: str | None = None) -> SpeechExample:
        """Return what the model reads for this item (audio at 16 kHz, history included)."""
        return SpeechExample(resample(self.audio, self.sample_rate), self.prompt, target, self.history)


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
            [item.speech_example() for item in chunk],
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


def run_dialogue_inference(
    speech_lm: SpeechLM,
    dialogues: Sequence[Sequence[InferenceItem]],
    history_mode: str,
    max_new_tokens: int = INFERENCE_MAX_NEW_TOKENS,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
    batch_size: int = INFERENCE_BATCH_SIZE,
) -> list[InferenceOutput]:
    """Return one output per turn, dialogue by dialogue in turn order (fewer when cancelled).

    Each dialogue lists its turns from the first; turn k's item carries the k-1 earlier turns as
    history with their gold replies. Turns at the same position of different dialogues share
    batches; a dialogue's turn k waits for its turn k-1 (greedy decoding).
    """
    if history_mode not in HISTORY_MODES:
        raise ValueError(f"history mode must be one of {', '.join(HISTORY_MODES)}, not {history_mode!r}")
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    for dialogue in dialogues:
        for position, item in enumerate(dialogue):
            if len(item.history) != position:
                raise ValueError(
                    f"{item.item_id}: turn {position + 1} of its dialogue holds {len(item.history)} earlier "
                    f"turns, not {position}"
                )
    answers: list[list[InferenceOutput]] = [[] for _ in dialogues]
    total = sum(len(dialogue) for dialogue in dialogues)
    done = 0
    for position in range(max((len(dialogue) for dialogue in dialogues), default=0)):
        pending = [
            (index, dialogue[position])
            for index, dialogue in enumerate(dialogues)
            if position < len(dialogue)
        ]
        for start in range(0, len(pending), batch_size):
            if should_cancel is not None and should_cancel():
                return [output for dialogue in answers for output in dialogue]
            chunk = pending[start : start + batch_size]
            fed = [_with_replies(item, answers[index], history_mode) for index, item in chunk]
            texts = speech_lm.generate_batch(
                [item.speech_example() for item in fed], max_new_tokens=max_new_tokens
            )
            for (index, _), item, (text,) in zip(chunk, fed, texts, strict=True):
                replies = tuple(turn.reply for turn in item.history)
                answers[index].append(InferenceOutput(item.item_id, text, parse_output(text), replies))
            done += len(chunk)
            if on_progress is not None:
                on_progress(
                    done / total, f"{done}/{total} turns (turn {position + 1})", {"done": float(done)}
                )
    return [output for dialogue in answers for output in dialogue]


def _with_replies(
    item: InferenceItem, earlier: Sequence[InferenceOutput], history_mode: str
) -> InferenceItem:
    """Return the item with the model's own earlier answers as its history's replies ("own" mode)."""
    if history_mode == HISTORY_GOLD:
        return item
    history = tuple(
        replace(turn, reply=output.spoken_reply()) for turn, output in zip(item.history, earlier, strict=True)
    )
    return replace(item, history=history)
