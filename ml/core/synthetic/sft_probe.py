"""Does SFT (with or without AAA) teach a tiny SpeechLM to hear emotion in prosody? (``bench/sft_learns.py``)

A randomly initialised tiny Qwen2.5-Omni thinker of the real class is trained with ``train_sft`` on
the synthetic task's training speakers for a fixed number of steps, then asked, greedily, for its
perception of the held-out speakers' utterances. Perception accuracy is the share of those whose
``Emotion:`` names the spoken emotion; rho (``ml.core.aaa``) is measured on the held-out
utterances with their gold targets before and after training.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ml.core.aaa import measure_rho
from ml.core.config import SftConfig
from ml.core.sft import SftExample, train_sft
from ml.core.speech.inputs import SAMPLE_RATE, SpeechExample
from ml.core.speech.loading import load_speech_lm
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import TinySpec, build_tiny_speech_lm
from ml.core.synthetic.prosody import EMOTIONS, PROMPT, ProsodyTask, Utterance

ARCH = "qwen2_5_omni_thinker"
# The longest utterance (slow, sad) is about 2.4 s.
SPEC = TinySpec(audio_chunk_seconds=3)
# Greedy decoding stops well after "Emotion: <label>." (the perception span is about 25 tokens).
PERCEPTION_TOKENS = 56
_EMOTION = re.compile(r"Emotion:\s*([a-z]+)", re.IGNORECASE)
_BATCH = 16


def build_model(seed: int) -> SpeechLM:
    """Return a fresh random tiny SpeechLM (the same initial weights for the same seed)."""
    return build_tiny_speech_lm(ARCH, seed=seed, spec=SPEC)


def heard_emotion(text: str) -> str | None:
    """Return the emotion a generated text names after ``Emotion:`` (None when it names none of ours)."""
    match = _EMOTION.search(text)
    label = match.group(1).lower() if match else None
    return label if label in EMOTIONS else None


def perceived(speech_lm: SpeechLM, utterances: Sequence[Utterance]) -> list[str | None]:
    """Return the emotion the model names for each utterance (greedy decoding)."""
    heard: list[str | None] = []
    for start in range(0, len(utterances), _BATCH):
        chunk = utterances[start : start + _BATCH]
        texts = speech_lm.generate_batch(
            [(utterance.audio, PROMPT) for utterance in chunk], max_new_tokens=PERCEPTION_TOKENS
        )
        heard.extend(heard_emotion(completions[0]) for completions in texts)
    return heard


def perception_accuracy(speech_lm: SpeechLM, utterances: Sequence[Utterance]) -> float:
    """Return the share of utterances whose spoken emotion the model names."""
    heard = perceived(speech_lm, utterances)
    return float(
        np.mean([label == utterance.emotion for label, utterance in zip(heard, utterances, strict=True)])
    )


def mean_rho(speech_lm: SpeechLM, utterances: Sequence[Utterance]) -> float:
    """Return rho averaged over the utterances, their gold outputs as targets (all layers and heads)."""
    values: list[torch.Tensor] = []
    for start in range(0, len(utterances), _BATCH):
        batch = speech_lm.collate(
            [SpeechExample(u.audio, PROMPT, u.gold.output()) for u in utterances[start : start + _BATCH]]
        )
        values.append(measure_rho(speech_lm, batch))
    return float(torch.cat(values).nanmean())


def sft_examples(utterances: Sequence[Utterance]) -> list[SftExample]:
    """Return the utterances as SFT examples with their gold outputs."""
    return [SftExample(u.audio, SAMPLE_RATE, PROMPT, u.gold.output()) for u in utterances]


@dataclass(frozen=True)
class SftOutcome:
    """One SFT run: held-out perception accuracy and rho before and after, and the final losses."""

    seed: int
    lambda_aaa: float
    accuracy_before: float
    accuracy_after: float
    rho_before: float
    rho_after: float
    final_ce: float


def sft_config(seed: int, lambda_aaa: float, steps: int, learning_rate: float = 2e-3) -> SftConfig:
    """Return the probe's SFT settings: full fine-tuning, batch 8, a short warm-up."""
    return SftConfig(
        max_steps=steps,
        learning_rate=learning_rate,
        batch_size=8,
        warmup_steps=min(10, steps),
        lambda_aaa=lambda_aaa,
        seed=seed,
    )


def run_sft(
    task: ProsodyTask,
    seed: int,
    lambda_aaa: float,
    steps: int,
    before: tuple[float, float] | None = None,
) -> tuple[SftOutcome, SpeechLM]:
    """Train a fresh model for ``steps`` steps; return the outcome and the trained model.

    ``before`` is (accuracy, rho) of the untrained model when already measured for this seed
    (the initial weights depend on the seed alone).
    """
    speech_lm = build_model(seed)
    if before is None:
        before = (perception_accuracy(speech_lm, task.test), mean_rho(speech_lm, task.test))
    result = train_sft(speech_lm, sft_examples(task.train), sft_config(seed, lambda_aaa, steps))
    recent = [entry["ce"] for entry in result.history[-10:]]
    outcome = SftOutcome(
        seed=seed,
        lambda_aaa=lambda_aaa,
        accuracy_before=before[0],
        accuracy_after=perception_accuracy(speech_lm, task.test),
        rho_before=before[1],
        rho_after=mean_rho(speech_lm, task.test),
        final_ce=float(np.mean(recent)),
    )
    return outcome, speech_lm


def checkpoint_dir(cache_dir: Path, seed: int, steps: int) -> Path:
    """Return where the plain-SFT model of one seed and step budget is kept (RL starts from it)."""
    return cache_dir / f"sft-{ARCH}-seed{seed}-steps{steps}"


def save_sft_checkpoint(speech_lm: SpeechLM, directory: Path) -> None:
    """Write the model with its tokenizer and feature extractor; a rename makes it appear whole."""
    partial = directory.with_name(directory.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    speech_lm.save_pretrained(partial)
    if directory.exists():
        shutil.rmtree(directory)
    partial.rename(directory)


def sft_checkpoint(task: ProsodyTask, seed: int, steps: int, cache_dir: Path) -> SpeechLM:
    """Return the plain-SFT model (lambda 0) of ``run_sft``: loaded when cached, else trained and saved."""
    directory = checkpoint_dir(cache_dir, seed, steps)
    if (directory / "config.json").exists():
        return load_speech_lm(directory)
    speech_lm = build_model(seed)
    train_sft(speech_lm, sft_examples(task.train), sft_config(seed, 0.0, steps))
    save_sft_checkpoint(speech_lm, directory)
    return speech_lm
