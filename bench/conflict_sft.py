"""Does AAA help a tiny SpeechLM hear the voice when the words mislead? (issue #25's mini-replication)

    python bench/conflict_sft.py [--seeds 6] [--first-seed 2] [--steps 150] [--jobs 2] [--lambdas 0.03,0.1,0.3]
        [--target-ratios 2] [--save NAME] [--role TEXT]
    python bench/conflict_sft.py --summarise NAME [--save NAME] [--role TEXT]

The task (``ml.core.synthetic.conflict``): the transcript is in the prompt and names an emotion
that agrees with the voice on 75% of training items and on no test item. Per seed, a fresh tiny
Qwen2.5-Omni thinker is trained with ``train_sft`` for ``--steps`` steps of 8, plain and with AAA
at each of ``--lambdas`` (same seed, initial weights and example order): a sweep whose best value
is SftConfig's default.

The figure compared is **listening**: on the 96 (all-conflict) test items, the probability the
model gives the spoken emotion where its output names one, teacher-forced and normalised over
the four emotions (``emotion_probabilities``), averaged over the run's trajectory (measured every
``LISTEN_EVERY`` steps): the area under the learning curve, so a model that learns to listen
sooner scores higher. It is the figure that can tell: greedy accuracy at one budget jumps with
the step where a seed's listening takes off (seeds 2-7 from step 80 to 130), so its paired
differences vary by 0.18 between seeds (about 50 seeds for a +-0.05 interval); listening's vary by
about 0.04. Greedy accuracy at the end, the share naming the *words'* emotion and rho before and
after are printed too, then each lambda minus plain paired by seed with 95% t intervals, and rho
after AAA over rho after plain SFT from the same start (Figure 5's contrast). `--target-ratios`
runs each lambda at each hinge target (`SftConfig.aaa_target_ratio`, which sets how far AAA
raises rho); `--save` writes every run, figure and the setting it ran in (device, processes,
wall and CPU time, load average) to bench/results/ (`bench.claims`), and `--summarise NAME`
recomputes a saved run's figures from its per-seed values, training nothing.
Runs are spread over ``--jobs`` one-thread processes; deterministic kernels are requested.

The budget: on seeds 0 and 1 (hence ``--first-seed 2``), plain SFT names the words' emotion or a
fixed one up to about step 100 and hears the voice from step 120-200, so 150 steps hold the
take-off of every seed. Each run's plain model is saved (``start_checkpoint``):
``bench/conflict_rl.py`` starts every arm of a seed from it.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import multiprocessing
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
from scipy import stats

from bench.claims import Interval, interval_json, load, run_setting, save
from ml.core.aaa import measure_rho
from ml.core.config import DEFAULT_AAA_TARGET_RATIO
from ml.core.sft import SftExample, train_sft
from ml.core.speech.inputs import IGNORE_INDEX, SpeechExample, completion_logprobs
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import TinySpec, build_tiny_speech_lm
from ml.core.synthetic.conflict import (
    EMOTIONS,
    INSTRUCTION,
    SAMPLE_RATE,
    URGENCIES,
    ConflictItem,
    ConflictTask,
    build_conflict_task,
    gold_for,
)
from ml.core.synthetic.prosody import default_cache_dir
from ml.core.synthetic.sft_probe import heard_emotion, save_sft_checkpoint, sft_config

ARCH = "qwen2_5_omni_thinker"
SPEC = TinySpec(audio_chunk_seconds=1)
# "<think>\n<perception>Emotion: x. Rate: y." is about 20 tokens; greedy decoding stops after it.
PERCEPTION_TOKENS = 24
# 96 test items: the binomial sd of one run's accuracy is about 0.05 (0.07 with 48).
TEST_SIZE = 96
_BATCH = 16
# Listening is measured every this many steps (and at the last): 15 points over 150 steps.
LISTEN_EVERY = 10


def conflict_task() -> ConflictTask:
    """Return the benches' task: 160 training items (75% agreeing words), 96 conflict test items."""
    return build_conflict_task(test_size=TEST_SIZE)


def start_checkpoint(seed: int, steps: int, task: ConflictTask) -> Path:
    """Return where the plain-SFT model of a seed and budget is kept. The name carries a digest of
    everything the model depends on (task, gold, model sizes, SFT settings), so a changed recipe
    never loads a stale model."""
    recipe = repr(
        (
            ARCH,
            SPEC,
            len(task.test),
            INSTRUCTION,
            [gold_for(emotion, urgency).output() for emotion in EMOTIONS for urgency in URGENCIES],
            sft_config(seed, 0.0, steps),
        )
    )
    digest = hashlib.sha1(recipe.encode()).hexdigest()[:10]
    return default_cache_dir().with_name("synthetic_conflict") / f"sft-seed{seed}-steps{steps}-{digest}"


def sft_examples(items: Sequence[ConflictItem]) -> list[SftExample]:
    return [SftExample(i.audio, SAMPLE_RATE, i.prompt, i.gold.output()) for i in items]


def paired(differences: Sequence[float]) -> str:
    """Return ``mean [low, high]``, a 95% t interval of paired differences (n - 1 df)."""
    n = len(differences)
    mean = statistics.fmean(differences)
    if n < 2:
        return f"{mean:+.3f} (one seed, no interval)"
    half = stats.t.ppf(0.975, n - 1) * statistics.stdev(differences) / n**0.5
    return f"{mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}] ({n} seeds)"


def cpu_seconds() -> float:
    """Return the CPU time (user and system) of this process and its finished worker processes:
    on a loaded machine the wall time says little, and CPU / jobs is the wall time on idle cores."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def deterministic() -> None:
    """One thread and torch's deterministic kernels (a warning, not an error, where an op has none)."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True, warn_only=True)


def heard(speech_lm: SpeechLM, items: Sequence[ConflictItem]) -> list[str | None]:
    """Return the emotion the model names for each item (greedy)."""
    labels: list[str | None] = []
    for start in range(0, len(items), _BATCH):
        chunk = items[start : start + _BATCH]
        texts = speech_lm.generate_batch(
            [(item.audio, item.prompt) for item in chunk], max_new_tokens=PERCEPTION_TOKENS
        )
        labels.extend(heard_emotion(completions[0]) for completions in texts)
    return labels


def emotion_probabilities(speech_lm: SpeechLM, items: Sequence[ConflictItem]) -> list[dict[str, float]]:
    """Return, per item, the model's probability of each emotion where its output names one.

    Each candidate is the gold output up to ``Emotion: `` followed by the emotion and its full
    stop, scored by teacher forcing (the sum of its target tokens' log-probabilities, the closing
    end-of-turn left out); the shared prefix scores the same for every candidate, so a softmax over
    the four is the model's choice among them alone."""
    candidates: list[SpeechExample] = []
    for item in items:
        output = item.gold.output()
        prefix = output[: output.index("Emotion: ") + len("Emotion: ")]
        candidates.extend(SpeechExample(item.audio, item.prompt, f"{prefix}{e}.") for e in EMOTIONS)
    scores: list[torch.Tensor] = []
    with torch.no_grad():
        for start in range(0, len(candidates), 2 * _BATCH):
            batch = speech_lm.collate(candidates[start : start + 2 * _BATCH])
            labels = batch.labels
            assert labels is not None
            logprobs = completion_logprobs(speech_lm.forward(batch).logits, labels)
            # Position t scores labels[t]; the last target position is the end-of-turn token.
            for row, target_start in enumerate(batch.target_starts):
                last = int((labels[row] != IGNORE_INDEX).nonzero().max())
                scores.append(logprobs[row, target_start:last].sum())
    choices = torch.stack(scores).view(len(items), len(EMOTIONS)).softmax(dim=-1)
    return [dict(zip(EMOTIONS, row.tolist(), strict=True)) for row in choices]


def listening(speech_lm: SpeechLM, items: Sequence[ConflictItem]) -> float:
    """Return the mean probability of the spoken emotion (``emotion_probabilities``)."""
    probabilities = emotion_probabilities(speech_lm, items)
    return statistics.fmean(p[item.emotion] for p, item in zip(probabilities, items, strict=True))


def mean_rho(speech_lm: SpeechLM, items: Sequence[ConflictItem]) -> float:
    values = []
    for start in range(0, len(items), _BATCH):
        examples = [SpeechExample(i.audio, i.prompt, i.gold.output()) for i in items[start : start + _BATCH]]
        values.append(measure_rho(speech_lm, speech_lm.collate(examples)))
    return float(torch.cat(values).nanmean())


def train(
    speech_lm: SpeechLM,
    seed: int,
    lambda_aaa: float,
    steps: int,
    task: ConflictTask,
    on_step: Callable[[int], None] | None = None,
    target_ratio: float = DEFAULT_AAA_TARGET_RATIO,
) -> None:
    """Train the model in place with the benches' SFT recipe (AAA's hinge stopping at
    `target_ratio` x the starting rho), calling ``on_step(step)`` after each step; a plain model
    (lambda 0) is saved as the seed's RL start."""

    def progress(fraction: float, message: str, metrics: dict[str, float]) -> None:
        if on_step is not None:
            on_step(round(fraction * steps))

    config = dataclasses.replace(sft_config(seed, lambda_aaa, steps), aaa_target_ratio=target_ratio)
    train_sft(speech_lm, sft_examples(task.train), config, on_progress=progress)
    if lambda_aaa == 0:
        directory = start_checkpoint(seed, steps, task)
        directory.parent.mkdir(parents=True, exist_ok=True)
        save_sft_checkpoint(speech_lm, directory)


def one_run(
    seed: int,
    lambda_aaa: float,
    steps: int,
    task: ConflictTask | None = None,
    target_ratio: float = DEFAULT_AAA_TARGET_RATIO,
) -> dict[str, float]:
    """Train one model; return listening (its curve's mean), and at the end listening, greedy
    accuracy, the word-following share and rho before and after."""
    deterministic()
    task = task or conflict_task()
    speech_lm = build_tiny_speech_lm(ARCH, seed=seed, spec=SPEC)
    rho_before = mean_rho(speech_lm, task.test)
    curve: list[float] = []

    def measure(step: int) -> None:
        if step % LISTEN_EVERY == 0 or step == steps:
            curve.append(listening(speech_lm, task.test))

    train(speech_lm, seed, lambda_aaa, steps, task, on_step=measure, target_ratio=target_ratio)
    labels = heard(speech_lm, task.test)
    return {
        "seed": seed,
        "lambda": lambda_aaa,
        "target_ratio": target_ratio,
        "listening": statistics.fmean(curve),
        "listening_end": curve[-1],
        "accuracy": statistics.fmean(label == i.emotion for label, i in zip(labels, task.test, strict=True)),
        "follows_words": statistics.fmean(
            label == i.word_emotion for label, i in zip(labels, task.test, strict=True)
        ),
        "rho_before": rho_before,
        "rho_after": mean_rho(speech_lm, task.test),
    }


METRICS = ("listening", "listening_end", "accuracy", "follows_words", "rho_after")


def arm_name(lambda_aaa: float, target_ratio: float) -> str:
    return "plain" if lambda_aaa == 0 else f"aaa_lambda{lambda_aaa:g}_ratio{target_ratio:g}"


def summarise(
    figures: dict[str, Any], results: dict[tuple[int, tuple[float, float]], dict[str, float]]
) -> dict[str, Any]:
    """Add to `figures` (which names its "seeds") the means, each AAA arm minus plain SFT paired
    by seed, rho's rise over each arm's start and rho after AAA over rho after plain SFT, all
    computed from the per-seed `results`; print them and return `figures`."""
    seeds = figures["seeds"]
    plain = (0.0, DEFAULT_AAA_TARGET_RATIO)
    arms = [plain, *sorted({arm for _, arm in results if arm != plain})]
    figures["runs"] = [results[(seed, arm)] for arm in arms for seed in seeds]
    figures.update(means={}, minus_plain={}, rho_rise={}, rho_after_over_plain={})
    for arm in arms:
        means = {
            metric: statistics.fmean(results[(seed, arm)][metric] for seed in seeds)
            for metric in (*METRICS, "rho_before")
        }
        figures["means"][arm_name(*arm)] = {metric: round(value, 4) for metric, value in means.items()}
        print(f"{arm_name(*arm)}: " + ", ".join(f"{metric} {value:.3f}" for metric, value in means.items()))
    for arm in arms[1:]:
        for metric in METRICS:
            gains = [results[(s, arm)][metric] - results[(s, plain)][metric] for s in seeds]
            print(f"{arm_name(*arm)} minus plain, {metric}: {paired(gains)}")
            if len(gains) > 1:
                figures["minus_plain"].setdefault(arm_name(*arm), {})[metric] = interval_json(
                    Interval.of(gains)
                )
        # Figure 5's contrast: rho after AAA over rho after plain SFT from the same start.
        over_plain = [results[(s, arm)]["rho_after"] / results[(s, plain)]["rho_after"] - 1 for s in seeds]
        print(f"{arm_name(*arm)} rho after over plain's - 1: {paired(over_plain)}")
        figures["rho_after_over_plain"][arm_name(*arm)] = (
            interval_json(Interval.of(over_plain))
            if len(over_plain) > 1
            else {"mean": round(over_plain[0], 4)}
        )
    for arm in arms:
        rises = [results[(s, arm)]["rho_after"] / results[(s, arm)]["rho_before"] - 1 for s in seeds]
        print(f"rho rise (after / before - 1), {arm_name(*arm)}: {paired(rises)}")
        figures["rho_rise"][arm_name(*arm)] = (
            interval_json(Interval.of(rises)) if len(rises) > 1 else {"mean": round(rises[0], 4)}
        )
    return figures


def saved_results(figures: dict[str, Any]) -> dict[tuple[int, tuple[float, float]], dict[str, float]]:
    """Return the per-seed results of a saved run, keyed as `summarise` takes them."""
    return {(run["seed"], (run["lambda"], run["target_ratio"])): run for run in figures["runs"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--first-seed", type=int, default=2)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lambdas", default="0.03,0.1,0.3", help="AAA weights to compare with plain SFT")
    parser.add_argument(
        "--target-ratios",
        default=f"{DEFAULT_AAA_TARGET_RATIO:g}",
        help="AAA hinge targets (rho* / starting rho), each run at every lambda",
    )
    parser.add_argument("--save", default="", help="save the figures as bench/results/<SAVE>.json")
    parser.add_argument("--role", default="", help="what the run is for, saved with its figures")
    parser.add_argument(
        "--summarise",
        default="",
        metavar="NAME",
        help="train nothing: recompute the figures of bench/results/<NAME>.json from its saved runs "
        "(and save them as --save, with --role)",
    )
    args = parser.parse_args()
    figures: dict[str, Any]
    if args.summarise:
        figures = load(args.summarise)
        if args.role:
            figures["role"] = args.role
        summarise(figures, saved_results(figures))
        if args.save:
            print(f"saved {save(args.save, figures)}")
        return
    started = time.monotonic()
    arms = [(0.0, DEFAULT_AAA_TARGET_RATIO)] + [
        (float(value), float(ratio))
        for value in args.lambdas.split(",")
        for ratio in args.target_ratios.split(",")
    ]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    # Plain runs first: their checkpoints are what bench/conflict_rl.py starts from.
    runs = [(seed, arm) for arm in arms for seed in seeds]
    results: dict[tuple[int, tuple[float, float]], dict[str, float]] = {}
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {
            pool.submit(one_run, seed, arm[0], args.steps, None, arm[1]): (seed, arm) for seed, arm in runs
        }
        for future, key in futures.items():
            result = results[key] = future.result()
            print(
                f"seed {key[0]} {arm_name(*key[1])} listening {result['listening']:.3f} "
                f"(end {result['listening_end']:.3f}) greedy accuracy {result['accuracy']:.3f} "
                f"follows words {result['follows_words']:.3f} rho {result['rho_before']:.3f} -> "
                f"{result['rho_after']:.3f}",
                flush=True,
            )
    print(
        f"{args.seeds} seeds x {args.steps} SFT steps of 8, {args.jobs} processes: "
        f"{time.monotonic() - started:.0f} s wall, {cpu_seconds():.0f} s CPU, load average (1, 5, 15 min) "
        + ", ".join(f"{load:.1f}" for load in os.getloadavg())
    )
    figures = {
        "command": "bench/conflict_sft.py " + " ".join(sys.argv[1:]),
        **({"role": args.role} if args.role else {}),
        "seeds": list(seeds),
        "steps": args.steps,
        "setting": run_setting(time.monotonic() - started, cpu_seconds(), args.jobs),
    }
    summarise(figures, results)
    if args.save:
        print(f"saved {save(args.save, figures)}")


if __name__ == "__main__":
    main()
