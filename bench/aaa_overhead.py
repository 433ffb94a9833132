"""Time one SFT step with Acoustic-Anchored Attention against the same step without it.

    python bench/aaa_overhead.py [--steps 10] [--warmup 3] [--batch 4] [--layers 4] [--hidden 256]

Both variants run in the same process on the same batch and model size: a random Qwen2-Audio of
the real class (4 decoder layers, hidden 256, 8 heads by default), 4 examples of 3.5-4 s audio
(about 90-100 audio tokens each) with a full EchoChat target. A step is forward, backward and
the AdamW update on a pre-collated batch (collation is the same for both and left out). After
warm-up, the variants alternate so drifting machine load hits both equally; the medians are
compared (wall clock; the process CPU-time ratio is printed too, as it is steadier on a shared
machine). AAA observes every decoder layer and all heads, its most expensive setting.

The last line is exactly ``aaa_step_ratio=<median AAA step / median plain step>``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# Run as a script from anywhere: make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch

from ml.core.config import SftConfig
from ml.core.runtime import prepare_for_training
from ml.core.sft import build_optimizer, sft_step
from ml.core.speech.inputs import SAMPLE_RATE, SpeechExample
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import TinySpec, build_tiny_speech_lm
from webapp.lib.output_format import render_output, render_reasoning, render_strategy

TARGET = render_output(
    perception=(
        "Low, falling pitch with little variation; slow speaking rate and long pauses; soft energy and a "
        "trembling voice. Emotion: sad, strong intensity, negative polarity; the words stay neutral, so "
        "the prosody carries the feeling."
    ),
    reasoning=render_reasoning(
        context="The user says they lost their job last week and have not told their family yet.",
        latent_need="Reassurance that losing the job does not make them a failure.",
        core_demand="To be heard and accepted before any talk of next steps.",
        constraints="Avoid quick advice and forced positivity; keep it short and warm.",
    ),
    strategy=render_strategy(["Emotional validation", "Reassurance", "Gentle guidance"], "comforting"),
    response=(
        "That sounds really heavy, and it makes sense that you feel this way. Losing a job says nothing "
        "about your worth. I am here with you; when you are ready, we can think about how to tell them."
    ),
)
PROMPT = "Listen to the speaker, reason about how they feel, then respond with empathy."


def speech_like(seconds: float, seed: int) -> np.ndarray:
    """Return a voiced signal with a falling pitch and light noise."""
    rng = np.random.default_rng(seed)
    time_axis = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    phase = 2 * np.pi * np.cumsum(160.0 * (1 - 0.2 * time_axis / seconds)) / SAMPLE_RATE
    signal = 0.3 * sum(np.sin(k * phase) / k for k in range(1, 6)) + 0.01 * rng.standard_normal(
        time_axis.shape
    )
    return signal.astype(np.float32)


def time_step(
    speech_lm: SpeechLM, batch_inputs: list, optimizer: torch.optim.Optimizer, config: SftConfig
) -> tuple[float, float]:
    """Return (wall seconds, process CPU seconds) of one step."""
    wall, cpu = time.perf_counter(), time.process_time()
    sft_step(speech_lm, batch_inputs, optimizer, config)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)

    spec = TinySpec(
        hidden_size=arguments.hidden,
        intermediate_size=arguments.hidden * 11 // 4,
        num_hidden_layers=arguments.layers,
        num_attention_heads=8,
        num_key_value_heads=4,
        audio_hidden_size=128,
        audio_layers=2,
        audio_heads=4,
        audio_chunk_seconds=4,
    )
    speech_lm = build_tiny_speech_lm("qwen2_audio", seed=0, spec=spec)
    plain = SftConfig(learning_rate=1e-4, lambda_aaa=0.0)
    anchored = SftConfig(learning_rate=1e-4, lambda_aaa=0.1)
    prepare_for_training(speech_lm, plain)
    optimizer = build_optimizer(speech_lm, plain)
    examples = [
        SpeechExample(speech_like(3.5 + 0.5 * (index % 2), seed=index), PROMPT, TARGET)
        for index in range(arguments.batch)
    ]
    batch = speech_lm.collate(examples)
    perception = speech_lm.span_token_mask(batch, "perception").sum(dim=1).float().mean()
    parameters = sum(parameter.numel() for parameter in speech_lm.model.parameters())
    print(
        f"model: {parameters / 1e6:.2f}M parameters, {arguments.layers} decoder layers, hidden {arguments.hidden}; "
        f"batch {arguments.batch} x {batch.input_ids.shape[1]} tokens, "
        f"{int(speech_lm.audio_token_mask(batch.input_ids)[0].sum())} audio tokens in row 0, "
        f"{float(perception):.0f} perception tokens per row"
    )

    for _ in range(arguments.warmup):
        time_step(speech_lm, [batch], optimizer, plain)
        time_step(speech_lm, [batch], optimizer, anchored)
    plain_times, anchored_times = [], []
    for _ in range(arguments.steps):
        plain_times.append(time_step(speech_lm, [batch], optimizer, plain))
        anchored_times.append(time_step(speech_lm, [batch], optimizer, anchored))

    plain_wall, plain_cpu = (statistics.median(values) for values in zip(*plain_times, strict=True))
    anchored_wall, anchored_cpu = (statistics.median(values) for values in zip(*anchored_times, strict=True))
    print(f"plain SFT step: median {plain_wall * 1000:.1f} ms wall, {plain_cpu * 1000:.1f} ms CPU")
    print(f"SFT + AAA step: median {anchored_wall * 1000:.1f} ms wall, {anchored_cpu * 1000:.1f} ms CPU")
    # CPU time is less disturbed by other jobs on a shared machine; the wall ratio is the headline.
    print(f"aaa_cpu_ratio={anchored_cpu / plain_cpu:.3f} ({arguments.steps} steps each)")
    print(f"aaa_step_ratio={anchored_wall / plain_wall:.3f}")


if __name__ == "__main__":
    main()
