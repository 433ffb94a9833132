"""Does the reward model, trained on a synthetic graded ladder, rank held-out responses by grade?

    python bench/reward_model_ranks.py [--seeds 3] [--steps 150]

The reward model is ``ml.core.reward.model``'s: a Qwen2.5-Omni thinker backbone (here a random
tiny one of the real class) with a content head (0-5, ordinal) and an audio-alignment head, fully
fine-tuned. Its training data (``ml.core.synthetic.reward_probe``): for each training-voice user
turn of the synthetic prosody task, one response per grade 0-5 (appendix D.1's ladder, in one of 3
training phrasings), voiced by the TTS backend (eSpeak NG) in the style that fits the user's
emotion, and grades 5, 3 and 1 also in the clashing style (not aligned). Per seed, a fresh model
is trained for ``--steps`` steps of 8 examples, then scores the held-out voices' turns: with a
training phrasing, and with a held-out phrasing never trained on. Printed: Spearman of the content
score against the true grade and alignment accuracy (chance 0.5 on a balanced set; the evaluation
sets are 6 aligned : 3 not aligned, so always answering "aligned" scores 0.667), before and after
training, per seed and as mean ± sd; the last lines are the summary.
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

from ml.core.synthetic.prosody import build_task
from ml.core.synthetic.reward_probe import RewardOutcome, cached_voice, run_reward

DEFAULT_STEPS = 150


def spread(values: Sequence[float]) -> str:
    """Return ``mean ± sd`` (sample sd; 0 for one value)."""
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {sd:.3f}"


def summary(outcomes: Sequence[RewardOutcome]) -> list[str]:
    """Return, per evaluation set, Spearman and alignment accuracy before -> after over seeds."""
    lines = []
    for name, before, after in (
        ("held-out voices, training phrasings", "seen_before", "seen_after"),
        ("held-out voices, held-out phrasing ", "new_before", "new_after"),
    ):
        first = [getattr(outcome, before) for outcome in outcomes]
        last = [getattr(outcome, after) for outcome in outcomes]
        lines.append(
            f"{name} (n={last[0].count}): Spearman {spread([f.spearman for f in first])} -> "
            f"{spread([f.spearman for f in last])}; alignment accuracy "
            f"{spread([f.alignment_accuracy for f in first])} -> {spread([f.alignment_accuracy for f in last])}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.monotonic()
    task = build_task()
    voice = cached_voice()
    print(
        f"reward model: tiny Qwen2.5-Omni thinker + heads, {args.steps} steps of 8 on the ladder of "
        f"{len(task.train)} training turns; held-out: {len(task.test)} turns of other voices",
        flush=True,
    )
    outcomes = []
    for seed in range(args.seeds):
        outcome = run_reward(task.train, task.test, seed, args.steps, voice)
        outcomes.append(outcome)
        print(
            f"seed {seed} Spearman seen {outcome.seen_before.spearman:.3f} -> {outcome.seen_after.spearman:.3f}, "
            f"new {outcome.new_before.spearman:.3f} -> {outcome.new_after.spearman:.3f}; alignment accuracy "
            f"seen {outcome.seen_after.alignment_accuracy:.3f}, new {outcome.new_after.alignment_accuracy:.3f}",
            flush=True,
        )
    print(
        f"took {time.monotonic() - started:.0f} s wall, {time.process_time():.0f} s CPU (one thread), "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for line in summary(outcomes):
        print(line)


if __name__ == "__main__":
    main()
