"""Time a take's audio pipeline on a minute of speech: decode + QC, then the acoustic analysis.

    python bench/acoustics.py [--seconds 59] [--repeats 3]

Prints real-time factors (processing time / audio duration; lower is faster), best of the
repeats, with Praat's pitch tracking alone beside the whole pipeline since it is the main cost.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# Run as a script from anywhere: make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import imageio_ffmpeg
import numpy as np
import parselmouth

from annotation.audio.acoustics import (
    FRAME_SECONDS,
    PITCH_CEILING_HZ,
    PITCH_FLOOR_HZ,
    AcousticAnalysis,
    analyze,
    as_float_samples,
)
from annotation.audio.speech.rate import measure_articulation_rate
from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.audio.upload import normalise_upload

SENTENCES = [
    "I finally heard back from the hospital this morning.",
    "Honestly, I did not expect them to call so soon.",
    "They said the results look much better than last time.",
    "I was so nervous that I could barely hold the phone.",
    "Can you believe it has already been three months?",
    "Anyway, I wanted you to be the first one to know.",
]


def minute_of_speech(seconds: float) -> tuple[np.ndarray, int, str]:
    """Return eSpeak NG sentences, 0.4 s apart, repeated to `seconds`, with their transcript."""
    pieces: list[np.ndarray] = []
    words: list[str] = []
    rate = 0
    total = 0
    index = 0
    while True:
        sentence = SENTENCES[index % len(SENTENCES)]
        speech = synthesize(sentence, rate_wpm=150 + 10 * (index % 5), pitch=40 + 5 * (index % 4))
        rate = speech.sample_rate
        gap = np.zeros(round(0.4 * rate), dtype=np.int16)
        if (total + len(speech.samples) + len(gap)) / rate > seconds:
            break
        pieces += [speech.samples, gap]
        words.append(sentence)
        total += len(speech.samples) + len(gap)
        index += 1
    return np.concatenate(pieces), rate, " ".join(words)


def to_mp3(wav: bytes) -> bytes:
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-f", "wav", "-i", "pipe:0"]
    command += ["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3", "pipe:1"]
    return subprocess.run(command, input=wav, capture_output=True, check=True).stdout


def best_of(repeats: int, work: Callable[[], object]) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        timings.append(time.perf_counter() - start)
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=59.0, help="clip length (uploads allow up to 60 s)")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()

    samples, rate, transcript = minute_of_speech(options.seconds)
    mp3 = to_mp3(to_wav_bytes(samples, rate))
    audio = normalise_upload(mp3, "bench.mp3")
    duration = audio.duration_seconds
    words = len(transcript.split())
    print(f"clip: {duration:.1f} s of eSpeak NG speech, {words} words, MP3 {len(mp3) / 1024:.0f} KB")

    decode = best_of(options.repeats, lambda: normalise_upload(mp3, "bench.mp3"))
    analysis = best_of(options.repeats, lambda: analyze(audio.samples, audio.sample_rate))

    def whole_pipeline() -> AcousticAnalysis:
        upload = normalise_upload(mp3, "bench.mp3")
        return analyze(upload.samples, upload.sample_rate)

    pipeline = best_of(options.repeats, whole_pipeline)
    sound = parselmouth.Sound(audio.samples.astype(np.float64), sampling_frequency=audio.sample_rate)
    pitch = best_of(
        options.repeats,
        lambda: sound.to_pitch_ac(
            time_step=FRAME_SECONDS, pitch_floor=PITCH_FLOOR_HZ, pitch_ceiling=PITCH_CEILING_HZ
        ),
    )

    result = analyze(audio.samples, audio.sample_rate)
    phones_per_second = measure_articulation_rate(
        as_float_samples(audio.samples), audio.sample_rate, transcript
    )
    print(
        f"measured: median_f0_hz={result.median_f0_hz} loudness_lufs={result.integrated_loudness_lufs} "
        f"phones_per_second={phones_per_second} intonation={result.intonation}"
    )
    print(f"decode_qc_rtf={decode / duration:.4f} analyze_rtf={analysis / duration:.4f}")
    print(f"pipeline_rtf={pipeline / duration:.4f} praat_pitch_rtf={pitch / duration:.4f}")
    print(f"pipeline_seconds={pipeline:.3f} praat_pitch_seconds={pitch:.3f} (best of {options.repeats})")


if __name__ == "__main__":
    main()
