"""Real-time factor and peak memory of each speech model, and of the whole take check, on a minute.

    python bench/speech_models.py [--seconds 60] [--repeats 2]

One minute of eSpeak NG speech (sentences read one after another with short pauses), 16 kHz.
Each model runs once to load (not timed), then the best of `--repeats` runs is reported as a
real-time factor (processing time / audio duration; lower is faster), in CPU time (what one core
spends, the figure that holds on a busy shared machine) and in wall time. Peak memory is the
process's peak resident set after each step (it only grows: read the increments). Threads as
the take analysis job has them: the speech layer runs each model on one thread itself
(`annotation.audio.speech.threads`), so the bench sets nothing.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import numpy.typing as npt
from scipy.signal import resample_poly

from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.alignment import align
from annotation.audio.speech.loudness import loudness
from annotation.audio.speech.quality import dnsmos_scores, plcmos_score
from annotation.audio.speech.speaker import speaker_embedding
from annotation.audio.speech.take_check import check_take
from annotation.audio.synthesis import synthesize

RATE = 16_000
SENTENCES = (
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "I never thought the weather would turn so cold before the end of summer.",
    "We will meet again tomorrow morning at the station by the old clock tower.",
)


def minute_of_speech(seconds: float) -> tuple[npt.NDArray[np.float64], str]:
    """Return about `seconds` of eSpeak speech at 16 kHz and its script."""
    pieces, words, total, index = [], [], 0.0, 0
    while total < seconds:
        text = SENTENCES[index % len(SENTENCES)]
        speech = synthesize(text)
        samples = resample_poly(speech.samples.astype(np.float64) / 32768, RATE, speech.sample_rate)
        pieces += [samples, np.zeros(RATE // 3)]
        words.append(text)
        total += len(samples) / RATE + 1 / 3
        index += 1
    return np.concatenate(pieces), " ".join(words)


def peak_mib() -> float:
    """Return this process's peak resident set in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_of(step: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Return the least CPU seconds and the least wall seconds of `repeats` runs after a first."""
    step()  # load the model
    cpu, wall = [], []
    for _ in range(repeats):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        step()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return min(cpu), min(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    samples, script = minute_of_speech(args.seconds)
    duration = len(samples) / RATE
    print(
        f"{duration:.1f} s of eSpeak speech, {len(script.split())} words; start {peak_mib():.0f} MiB peak RSS"
    )
    steps: list[tuple[str, Callable[[], object]]] = [
        ("forced alignment (pocketsphinx, 2 passes)", lambda: align(samples, script)),
        ("speech activity (silero-vad ONNX)", lambda: speech_activity(samples)),
        ("DNSMOS P.808 + P.835", lambda: dnsmos_scores(samples)),
        ("PLCMOS v2 (not in the take check)", lambda: plcmos_score(samples)),
        ("loudness + true peak (pyloudnorm)", lambda: loudness(samples, RATE)),
        ("speaker embedding (Resemblyzer)", lambda: speaker_embedding(samples)),
        ("whole take check", lambda: check_take(samples, script)),
    ]
    print(f"{'step':44} {'RTF (CPU)':>10} {'RTF (wall)':>11} {'peak RSS MiB':>13}")
    for name, step in steps:
        cpu, wall = best_of(step, args.repeats)
        print(f"{name:44} {cpu / duration:10.4f} {wall / duration:11.4f} {peak_mib():13.0f}", flush=True)


if __name__ == "__main__":
    main()
