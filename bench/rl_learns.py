"""Does RL from the SFT checkpoint raise the reward, with SDCA and with vanilla GRPO?

    python bench/rl_learns.py [--seeds 3] [--steps 20] [--sft-steps 120] [--samples 2]

Starts, per seed, from the plain-SFT checkpoint of ``bench/sft_learns.py`` on the synthetic
prosody task (loaded from var/synthetic_prosody/ when that bench has run, else trained here with
the same recipe and cached). From it, two RL runs of ``--steps`` steps each (2 training prompts x
4 rollouts a step, full fine-tuning, a frozen copy as KL reference): SDCA advantages, and vanilla
GRPO (one normalised R_total on every token), same seed, same prompts. The scorer is rule-based
against the synthetic gold (``ml.core.synthetic.rl_probe``). Printed, on the held-out voices:
mean R_total and each stage's mean score before and after (``--samples`` sampled completions per
utterance), and greedy perception accuracy; the last lines are the mean ± sd over seeds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

# Run as a script from anywhere: make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from ml.core.synthetic.prosody import ProsodyTask, build_task, default_cache_dir
from ml.core.synthetic.rl_probe import RlOutcome, run_rl
from ml.core.synthetic.sft_probe import sft_checkpoint

DEFAULT_STEPS = 20
DEFAULT_SFT_STEPS = 120
# What is printed per run, as (metric key, column name).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("total", "R_total"),
    ("perception_score", "s1 perception"),
    ("reasoning_score", "s2 reasoning"),
    ("strategy_score", "s3 strategy"),
    ("content", "content/5"),
    ("audio_alignment", "alignment"),
    ("format", "format"),
    ("greedy_accuracy", "greedy acc"),
)
MODES = ("sdca", "grpo")


def _value(metrics: dict[str, float], key: str) -> float:
    return metrics[key] / 5.0 if key == "content" else metrics[key]


def spread(values: Sequence[float]) -> str:
    """Return ``mean ± sd`` (sample sd; 0 for one value)."""
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {sd:.3f}"


def run_bench(
    task: ProsodyTask, seeds: Sequence[int], steps: int, sft_steps: int, samples: int, cache_dir: Path
) -> list[RlOutcome]:
    """Return one outcome per seed and mode, printing each as it finishes."""
    outcomes: list[RlOutcome] = []
    for seed in seeds:
        start = sft_checkpoint(task, seed, sft_steps, cache_dir)
        before = None
        for mode in MODES:
            outcome = run_rl(start, task.train, task.test, mode, seed, steps, samples, before)
            before = outcome.before
            outcomes.append(outcome)
            changes = "  ".join(
                f"{name} {_value(outcome.before, key):.3f}->{_value(outcome.after, key):.3f}"
                for key, name in COLUMNS
            )
            print(f"seed {seed} {mode:<4} {changes}", flush=True)
    return outcomes


def summary(outcomes: Sequence[RlOutcome]) -> list[str]:
    """Return per mode, for each metric, before and after as mean ± sd over seeds, and the change."""
    lines = []
    for mode in MODES:
        runs = [outcome for outcome in outcomes if outcome.mode == mode]
        lines.append(f"{mode} ({len(runs)} seeds), held-out, before -> after (change):")
        for key, name in COLUMNS:
            before = [_value(run.before, key) for run in runs]
            after = [_value(run.after, key) for run in runs]
            change = [b - a for a, b in zip(before, after, strict=True)]
            lines.append(f"  {name:<14} {spread(before)} -> {spread(after)}  ({spread(change)})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--sft-steps", type=int, default=DEFAULT_SFT_STEPS)
    parser.add_argument("--samples", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.monotonic()
    task = build_task()
    print(
        f"RL from the plain-SFT checkpoint ({args.sft_steps} steps), {args.steps} RL steps of 2 prompts x 4 "
        f"rollouts per mode; held-out: {len(task.test)} utterances x {args.samples} samples",
        flush=True,
    )
    outcomes = run_bench(
        task, range(args.seeds), args.steps, args.sft_steps, args.samples, default_cache_dir()
    )
    print(
        f"took {time.monotonic() - started:.0f} s wall, {time.process_time():.0f} s CPU (one thread), "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for line in summary(outcomes):
        print(line)


if __name__ == "__main__":
    main()
