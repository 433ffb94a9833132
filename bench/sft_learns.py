"""Does SFT teach a tiny SpeechLM to hear emotion from prosody alone, and does AAA help?

    python bench/sft_learns.py [--seeds 3] [--steps 120] [--lambda-aaa 0.1]

The task (``ml.core.synthetic.prosody``): neutral sentences spoken by eSpeak NG with the pitch,
rate and energy of neutral / happy / sad / angry, by 6 training voices; the test utterances come
from 3 held-out voices. Per seed, a randomly initialised tiny Qwen2.5-Omni thinker is trained with
``train_sft`` for ``--steps`` steps of 8 examples, once without AAA and once with
``--lambda-aaa`` (same seed, same initial weights, same example order), and then greedily decodes
its perception of the held-out utterances (``ml.core.synthetic.sft_probe``). Printed: perception
accuracy against chance, and rho (attention mass of perception tokens on audio tokens) before and
after, per seed and as mean ± sd over seeds; the last lines are the summary.

The plain-SFT models are cached as checkpoints under var/synthetic_prosody/ for
``bench/rl_learns.py`` to start from; the synthetic audio is cached there too.
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

from ml.core.config import SftConfig
from ml.core.synthetic.prosody import (
    TEST_SPEAKERS,
    TRAIN_SPEAKERS,
    ProsodyTask,
    build_task,
    default_cache_dir,
)
from ml.core.synthetic.sft_probe import (
    SftOutcome,
    build_model,
    checkpoint_dir,
    run_sft,
    save_sft_checkpoint,
)

DEFAULT_STEPS = 120
# The training default (SftConfig.lambda_aaa), as the forms and the command line offer it.
DEFAULT_LAMBDA = SftConfig.lambda_aaa


def spread(values: Sequence[float]) -> str:
    """Return ``mean ± sd`` (sample sd; 0 for one value)."""
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {sd:.3f}"


def run_bench(
    task: ProsodyTask, seeds: Sequence[int], steps: int, lambda_aaa: float, cache_dir: Path | None
) -> dict[float, list[SftOutcome]]:
    """Return the outcomes per lambda (0 and ``lambda_aaa``) over the seeds; cache plain-SFT models."""
    outcomes: dict[float, list[SftOutcome]] = {0.0: [], lambda_aaa: []}
    for seed in seeds:
        before: tuple[float, float] | None = None
        for value in outcomes:
            outcome, speech_lm = run_sft(task, seed, value, steps, before)
            before = (outcome.accuracy_before, outcome.rho_before)
            outcomes[value].append(outcome)
            print(
                f"seed {seed} lambda {value:<5g} accuracy {outcome.accuracy_before:.3f} -> "
                f"{outcome.accuracy_after:.3f}  rho {outcome.rho_before:.3f} -> {outcome.rho_after:.3f}  "
                f"final ce {outcome.final_ce:.3f}",
                flush=True,
            )
            if value == 0.0 and cache_dir is not None:
                save_sft_checkpoint(speech_lm, checkpoint_dir(cache_dir, seed, steps))
    return outcomes


def summary(outcomes: dict[float, list[SftOutcome]], chance: float) -> list[str]:
    """Return the summary lines: per lambda accuracy and rho over seeds, then AAA minus plain."""
    lines = []
    for value, runs in outcomes.items():
        name = "plain SFT        " if value == 0.0 else f"SFT + AAA λ={value:<5g}"
        lines.append(
            f"{name} held-out accuracy {spread([run.accuracy_after for run in runs])} "
            f"(before {spread([run.accuracy_before for run in runs])}, chance {chance:.3f})  "
            f"rho {spread([run.rho_before for run in runs])} -> {spread([run.rho_after for run in runs])}"
        )
    plain, aaa = (runs for value, runs in outcomes.items())
    gains = [b.accuracy_after - a.accuracy_after for a, b in zip(plain, aaa, strict=True)]
    lines.append(f"AAA minus plain, held-out accuracy, paired by seed: {spread(gains)} ({len(gains)} seeds)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--lambda-aaa", type=float, default=DEFAULT_LAMBDA)
    args = parser.parse_args()
    # Tiny models gain nothing from intra-op threads on a shared machine.
    torch.set_num_threads(1)
    started = time.monotonic()
    task = build_task()
    parameters = sum(parameter.numel() for parameter in build_model(0).model.parameters())
    print(
        f"task: {len(task.train)} training utterances ({len(TRAIN_SPEAKERS)} voices), {len(task.test)} "
        f"held-out ({len(TEST_SPEAKERS)} other voices), 4 emotions; tiny Qwen2.5-Omni thinker, "
        f"{parameters / 1e3:.0f}k parameters; {args.steps} SFT steps of 8 examples",
        flush=True,
    )
    outcomes = run_bench(task, range(args.seeds), args.steps, args.lambda_aaa, default_cache_dir())
    print(
        f"took {time.monotonic() - started:.0f} s wall, {time.process_time():.0f} s CPU (one thread), "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for line in summary(outcomes, task.chance):
        print(line)


if __name__ == "__main__":
    main()
