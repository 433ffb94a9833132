"""The headphone screen of Woods, Siegel, Traer & McDermott (2017), generated here.

Woods KJP, Siegel MH, Traer J, McDermott JH. "Headphone screening to facilitate web-based auditory
experiments." Attention, Perception, & Psychophysics 79(7):2064-2072 (2017).

Each trial plays three 200 Hz tones; the listener says which is the quietest. One tone is 6 dB
softer than the others; another is played in antiphase between the two channels. Over
headphones the antiphase tone sounds as loud as the standard, so the -6 dB tone is the quietest.
Over loudspeakers the two channels' sound waves partly cancel in the air, so the antiphase tone
sounds quietest and the listener answers wrongly. Six trials, passed with at least five correct
(the paper's criterion; chance is 1/3 per trial, so guessing passes with p < 0.02).

Pure: numpy and the standard library's wave writer, no Django.
"""

from __future__ import annotations

import io
import random
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

Tone = Literal["standard", "quiet", "antiphase"]

TONE_HZ = 200.0
TONE_SECONDS = 1.0
RAMP_SECONDS = 0.1  # raised-cosine on and off ramps, so no click gives the answer away
GAP_SECONDS = 0.5
QUIET_DB = -6.0
LEVEL = 0.5  # the standard tone's peak, of full scale: room for the listener's own volume setting
SAMPLE_RATE = 22_050
TRIALS = 6
PASS_MARK = 5


@dataclass(frozen=True)
class HeadphoneTrial:
    """The three tones of one trial in the order played."""

    tones: tuple[Tone, Tone, Tone]

    @property
    def answer(self) -> int:
        """Return the 1-based position of the quietest tone over headphones (the -6 dB one)."""
        return self.tones.index("quiet") + 1


def plan_trials(rng: random.Random, trials: int = TRIALS) -> list[HeadphoneTrial]:
    """Return `trials` trials, each with the three tones in a random order."""
    kinds: list[Tone] = ["standard", "quiet", "antiphase"]
    return [HeadphoneTrial(tuple(rng.sample(kinds, 3))) for _ in range(trials)]  # type: ignore[arg-type]


def _tone(kind: Tone) -> npt.NDArray[np.float64]:
    """Return one tone as (samples, 2) stereo."""
    t = np.arange(int(TONE_SECONDS * SAMPLE_RATE)) / SAMPLE_RATE
    ramp = int(RAMP_SECONDS * SAMPLE_RATE)
    envelope = np.ones_like(t)
    rise = 0.5 - 0.5 * np.cos(np.pi * np.arange(ramp) / ramp)
    envelope[:ramp], envelope[-ramp:] = rise, rise[::-1]
    gain = LEVEL * (10 ** (QUIET_DB / 20) if kind == "quiet" else 1.0)
    mono = gain * envelope * np.sin(2 * np.pi * TONE_HZ * t)
    right = -mono if kind == "antiphase" else mono
    return np.stack([mono, right], axis=1)


def trial_samples(trial: HeadphoneTrial) -> npt.NDArray[np.float64]:
    """Return the trial's audio as (samples, 2) floats in [-1, 1]: tone, gap, tone, gap, tone."""
    gap = np.zeros((int(GAP_SECONDS * SAMPLE_RATE), 2))
    parts: list[npt.NDArray[np.float64]] = []
    for index, kind in enumerate(trial.tones):
        if index:
            parts.append(gap)
        parts.append(_tone(kind))
    return np.concatenate(parts)


def stereo_wav_bytes(samples: npt.NDArray[np.float64], sample_rate: int) -> bytes:
    """Return (samples, 2) floats in [-1, 1] as a 16-bit stereo WAV file."""
    pcm = np.round(np.clip(samples, -1.0, 1.0) * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(pcm.tobytes())
    return buffer.getvalue()


def trial_wav(trial: HeadphoneTrial) -> bytes:
    """Return the trial as a WAV file."""
    return stereo_wav_bytes(trial_samples(trial), SAMPLE_RATE)


def score(trials: Sequence[HeadphoneTrial], answers: Sequence[int | None]) -> int:
    """Return how many trials the listener answered right (an unanswered trial is wrong)."""
    return sum(answer == trial.answer for trial, answer in zip(trials, answers, strict=True))


def passed(correct: int) -> bool:
    """Return True when `correct` right answers pass the screen."""
    return correct >= PASS_MARK
