"""Does RL from the SFT checkpoint raise the reward, with SDCA and with vanilla GRPO?

    python bench/rl_learns.py [--seeds 3] [--steps 20] [--sft-steps 120] [--samples 4] [--jobs 2]

Starts, per seed, from the plain-SFT checkpoint of ``bench/sft_learns.py`` on the synthetic
prosody task (loaded from var/synthetic_prosody/ when that bench has run, else trained here with
the same recipe and cached). From it, two RL runs of ``--steps`` steps each (8 training prompts x
8 rollouts a step, full fine-tuning, a frozen copy as KL reference): SDCA advantages, and vanilla
GRPO (one normalised R_total on every token), same seed, same prompts. The scorer is rule-based
against the synthetic gold (``ml.core.synthetic.rl_probe``). Printed, on the held-out voices and
on a third of the training voices' utterances (what RL was rewarded on): mean R_total and each
stage's mean score before and after (``--samples`` sampled completions per utterance), and greedy
perception accuracy; the last lines are the mean ± sd over seeds. The (seed, mode) runs are
spread over ``--jobs`` processes of one thread each.

``--one-prompt INDEX`` instead trains on that one training utterance alone (16 rollouts a step)
and prints its expected reward before and after (48 samples): can the loop fit what it is rewarded for?
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# Run as a script from anywhere: make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from ml.core.rl.training import train_rl
from ml.core.synthetic.prosody import ProsodyTask, Utterance, build_task, default_cache_dir
from ml.core.synthetic.rl_probe import (
    GROUP_SIZE,
    PROMPTS_PER_STEP,
    RlOutcome,
    expected_reward,
    rl_config,
    rl_prompts,
    run_rl,
    synthetic_stage_scorer,
)
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


def seen_part(task: ProsodyTask) -> list[Utterance]:
    """Return the training utterances measured alongside the held-out ones (every third)."""
    return task.train[::3]


def _one_run(seed: int, mode: str, steps: int, sft_steps: int, samples: int, cache_dir: Path) -> RlOutcome:
    torch.set_num_threads(1)
    task = build_task()
    start = sft_checkpoint(task, seed, sft_steps, cache_dir)
    # "before" is measured in each run; with the same seed it is the same figure for both modes.
    return run_rl(start, task.train, task.test, mode, seed, steps, samples, seen=seen_part(task))


def run_bench(
    seeds: Sequence[int], steps: int, sft_steps: int, samples: int, cache_dir: Path, jobs: int
) -> list[RlOutcome]:
    """Return one outcome per seed and mode, printing each as it finishes."""
    task = build_task()
    for seed in seeds:
        # Trained (and cached) here, before the runs that share it start in parallel.
        sft_checkpoint(task, seed, sft_steps, cache_dir)
    runs = [(seed, mode) for seed in seeds for mode in MODES]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = [
            pool.submit(_one_run, seed, mode, steps, sft_steps, samples, cache_dir) for seed, mode in runs
        ]
        outcomes = []
        for future in futures:
            outcome = future.result()
            outcomes.append(outcome)
            changes = "  ".join(
                f"{name} {_value(outcome.before, key):.3f}->{_value(outcome.after, key):.3f}"
                for key, name in COLUMNS
            )
            print(f"seed {outcome.seed} {outcome.mode:<4} held-out {changes}", flush=True)
    return outcomes


def summary(outcomes: Sequence[RlOutcome]) -> list[str]:
    """Return per mode and split, for each metric, before and after as mean ± sd over seeds, and the change."""
    lines = []
    for mode in MODES:
        runs = [outcome for outcome in outcomes if outcome.mode == mode]
        for split, before_of, after_of in (
            ("held-out voices", lambda run: run.before, lambda run: run.after),
            ("training voices", lambda run: run.seen_before, lambda run: run.seen_after),
        ):
            lines.append(f"{mode} ({len(runs)} seeds), {split}, before -> after (change):")
            for key, name in COLUMNS:
                before = [_value(before_of(run), key) for run in runs]
                after = [_value(after_of(run), key) for run in runs]
                change = [b - a for a, b in zip(before, after, strict=True)]
                lines.append(f"  {name:<14} {spread(before)} -> {spread(after)}  ({spread(change)})")
    return lines


def one_prompt(seed: int, index: int, steps: int, sft_steps: int, cache_dir: Path) -> None:
    """Print, per mode, the reward on one training utterance before and after RL on it alone."""
    task = build_task()
    start = sft_checkpoint(task, seed, sft_steps, cache_dir)
    utterance = [task.train[index]]
    for mode in MODES:
        config = dataclasses.replace(rl_config(mode, seed, steps), group_size=16, prompts_per_step=1)
        before = expected_reward(start, utterance, config, 48, seed)
        policy, reference = copy.deepcopy(start), copy.deepcopy(start)
        train_rl(policy, reference, rl_prompts(utterance), synthetic_stage_scorer(utterance), config)
        after = expected_reward(policy, utterance, config, 48, seed)
        changes = "  ".join(
            f"{name} {_value(before, key):.3f}->{_value(after, key):.3f}" for key, name in COLUMNS
        )
        print(f"seed {seed} {mode:<4} {utterance[0].item_id}: {changes}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--sft-steps", type=int, default=DEFAULT_SFT_STEPS)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--one-prompt", type=int, default=None, metavar="INDEX")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.one_prompt is not None:
        for seed in range(args.seeds):
            one_prompt(seed, args.one_prompt, args.steps, args.sft_steps, default_cache_dir())
        return
    started = time.monotonic()
    task = build_task()
    print(
        f"RL from the plain-SFT checkpoint ({args.sft_steps} steps), {args.steps} RL steps of "
        f"{PROMPTS_PER_STEP} prompts x {GROUP_SIZE} rollouts per mode; measured on {len(task.test)} held-out "
        f"and {len(seen_part(task))} training utterances x {args.samples} samples; {args.jobs} processes",
        flush=True,
    )
    outcomes = run_bench(
        range(args.seeds), args.steps, args.sft_steps, args.samples, default_cache_dir(), args.jobs
    )
    print(
        f"took {time.monotonic() - started:.0f} s wall in {args.jobs} processes of one thread, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for line in summary(outcomes):
        print(line)


if __name__ == "__main__":
    main()
