"""Table 8 on the conflict task: error propagation after RL with GRPO, SDCA and SDCA without gating.

    python bench/conflict_rl.py [--seeds 4] [--steps 10] [--sft-steps 80] [--samples 4] [--jobs 2]

Per seed, a tiny Qwen2.5-Omni thinker is trained with plain SFT on ``ml.core.synthetic.conflict``
(``bench/conflict_sft.py``'s recipe; cached under var/synthetic_conflict/), then three RL runs of
``--steps`` steps start from it (8 prompts x 8 rollouts, the rule-based scorer of
``ml.core.synthetic.rl_probe``): vanilla GRPO, SDCA (tau 0.6) and SDCA with tau 0 (no gating:
every span gets its signal). On the all-conflict test items, ``--samples`` sampled completions
each, printed per run and as paired differences with 95% t intervals:

- P(R|P): reasoning wholly right (s2 = 1) given perception right (s1 = 1);
- P(S|R): strategy right (s3 = 1) given reasoning right;
- Err: the error ratio, the share of rollouts with a wrong perception whose reasoning and
  strategy are wrong too (an early error cascading through every later stage);
- and, showing that stage errors are not collinear, the shares of "perception right, strategy
  wrong" and "perception wrong, strategy right" rollouts.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.conflict_sft import ARCH, SPEC, deterministic, paired
from ml.core.config import SdcaConfig
from ml.core.rl.rollouts import RlPrompt, score_rollouts
from ml.core.rl.training import train_rl
from ml.core.runtime import seed_everything
from ml.core.sft import SftExample, train_sft
from ml.core.speech.loading import load_speech_lm
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import build_tiny_speech_lm
from ml.core.synthetic.conflict import SAMPLE_RATE, ConflictItem, build_conflict_task
from ml.core.synthetic.prosody import default_cache_dir
from ml.core.synthetic.rl_probe import rl_config, synthetic_stage_scorer
from ml.core.synthetic.sft_probe import save_sft_checkpoint, sft_config

MODES = ("grpo", "sdca", "no-gating")
METRICS = ("P(R|P)", "P(S|R)", "Err", "P right S wrong", "P wrong S right", "mean s1-s3")
MAX_NEW_TOKENS = 120


def _checkpoint(seed: int, sft_steps: int) -> Path:
    return default_cache_dir().with_name("synthetic_conflict") / f"sft-{ARCH}-seed{seed}-steps{sft_steps}"


def start_model(seed: int, sft_steps: int) -> SpeechLM:
    """Return the plain-SFT model of a seed: loaded when cached, else trained and saved."""
    directory = _checkpoint(seed, sft_steps)
    if (directory / "config.json").exists():
        return load_speech_lm(directory)
    task = build_conflict_task()
    speech_lm = build_tiny_speech_lm(ARCH, seed=seed, spec=SPEC)
    examples = [SftExample(i.audio, SAMPLE_RATE, i.prompt, i.gold.output()) for i in task.train]
    train_sft(speech_lm, examples, sft_config(seed, 0.0, sft_steps))
    directory.parent.mkdir(parents=True, exist_ok=True)
    save_sft_checkpoint(speech_lm, directory)
    return speech_lm


def _share(hits: int, total: int) -> float:
    return hits / total if total else float("nan")


def table8(speech_lm: SpeechLM, items: Sequence[ConflictItem], samples: int, seed: int) -> dict[str, float]:
    """Return Table 8's figures (module docstring) over sampled completions of the items."""
    scorer = synthetic_stage_scorer(items)
    seed_everything(seed)
    rows = []
    for start in range(0, len(items), 12):
        chunk = items[start : start + 12]
        texts = speech_lm.generate_batch(
            [(i.audio, i.prompt) for i in chunk],
            max_new_tokens=MAX_NEW_TOKENS,
            do_sample=True,
            temperature=0.5,
            num_return_sequences=samples,
        )
        for item, completions in zip(chunk, texts, strict=True):
            rows.extend(score_rollouts(item.item_id, completions, scorer))
    p = [row.perception == 1.0 for row in rows]
    r = [row.reasoning == 1.0 for row in rows]
    s = [row.strategy == 1.0 for row in rows]
    n = len(rows)
    return {
        "P(R|P)": _share(sum(a and b for a, b in zip(p, r, strict=True)), sum(p)),
        "P(S|R)": _share(sum(a and b for a, b in zip(r, s, strict=True)), sum(r)),
        "Err": _share(sum(not a and not b and not c for a, b, c in zip(p, r, s, strict=True)), n - sum(p)),
        "P right S wrong": _share(sum(a and not c for a, c in zip(p, s, strict=True)), n),
        "P wrong S right": _share(sum(not a and c for a, c in zip(p, s, strict=True)), n),
        "mean s1-s3": statistics.fmean(row.perception + row.reasoning + row.strategy for row in rows) / 3,
    }


def one_run(seed: int, mode: str, steps: int, sft_steps: int, samples: int) -> dict[str, float]:
    deterministic()
    task = build_conflict_task()
    start = start_model(seed, sft_steps)
    config = rl_config("grpo" if mode == "grpo" else "sdca", seed, steps)
    if mode == "no-gating":
        config = dataclasses.replace(config, sdca=SdcaConfig(tau=0.0))
    config = dataclasses.replace(config, max_new_tokens=MAX_NEW_TOKENS)
    policy, reference = copy.deepcopy(start), copy.deepcopy(start)
    prompts = [RlPrompt(i.item_id, i.audio, SAMPLE_RATE, i.prompt) for i in task.train]
    train_rl(policy, reference, prompts, synthetic_stage_scorer(task.train), config)
    return table8(policy, task.test, samples, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--sft-steps", type=int, default=80)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    started = time.monotonic()
    deterministic()
    seeds = range(args.seeds)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        # Trained and cached before the runs that share them start.
        list(pool.map(start_model, seeds, [args.sft_steps] * args.seeds))
        futures = {
            (seed, mode): pool.submit(one_run, seed, mode, args.steps, args.sft_steps, args.samples)
            for seed in seeds
            for mode in MODES
        }
        results = {}
        for key, future in futures.items():
            results[key] = future.result()
            figures = "  ".join(f"{name} {value:.3f}" for name, value in results[key].items())
            print(f"seed {key[0]} {key[1]:<9} {figures}", flush=True)
    print(
        f"{args.seeds} seeds, {args.steps} RL steps from {args.sft_steps} SFT steps, {args.jobs} processes: "
        f"{time.monotonic() - started:.0f} s wall, load average {os.getloadavg()[0]:.1f}"
    )
    for mode in MODES:
        means = "  ".join(
            f"{name} {statistics.fmean(results[(s, mode)][name] for s in seeds):.3f}" for name in METRICS
        )
        print(f"{mode:<9} {means}")
    for mode in ("sdca", "no-gating"):
        for name in METRICS:
            values = [results[(s, mode)][name] - results[(s, "grpo")][name] for s in seeds]
            print(f"{mode} minus grpo, {name}: {paired(values)}")
    for name in METRICS:
        values = [results[(s, "sdca")][name] - results[(s, "no-gating")][name] for s in seeds]
        print(f"sdca minus no-gating, {name}: {paired(values)}")


if __name__ == "__main__":
    main()
