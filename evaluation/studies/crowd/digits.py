"""The hearing and environment check: digit triplets in noise, as in ITU-T P.808's crowd toolkit.

A digits-in-noise test (Smits, Kapteyn & Houtgast 2004, "Development and validation of an
automatic speech-in-noise screening test by telephone", Int. J. Audiology 43:15-28) plays three
spoken digits in speech-shaped noise; the listener types them. Someone with normal hearing in a
quiet room gets all of them at these signal-to-noise ratios; a loud room or a hearing loss
makes the hardest ones fail. ITU-T P.808 (2018) asks crowd raters for such a check before
they rate, and again in a later session.

The digits are spoken by eSpeak NG (`annotation.audio.synthesis`), the noise is shaped like the
triplet's own long-term spectrum (its magnitude spectrum with random phases), so it masks every
digit alike. Pure: no Django.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from annotation.audio.synthesis import synthesize, to_wav_bytes

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
# From easy to hard. The digits-in-noise threshold of normal hearing is near -10 dB in
# speech-shaped noise (Smits et al. 2004), so every triplet here is clearly above it.
SNRS_DB = (6.0, 3.0, 0.0, -3.0)
PASS_MARK = 3  # triplets typed right, of len(SNRS_DB)
NOISE_LEAD_SECONDS = 0.5
PEAK = 0.9


@dataclass(frozen=True)
class Triplet:
    digits: tuple[int, int, int]
    snr_db: float

    @property
    def answer(self) -> str:
        """Return the digits as the listener should type them."""
        return "".join(str(digit) for digit in self.digits)


def plan_triplets(rng: random.Random, snrs: Sequence[float] = SNRS_DB) -> list[Triplet]:
    """Return one triplet per SNR, in order of difficulty, three different digits each."""
    return [Triplet(tuple(rng.sample(range(10), 3)), snr) for snr in snrs]  # type: ignore[arg-type]


@lru_cache(maxsize=64)
def _spoken(digits: tuple[int, int, int]) -> tuple[npt.NDArray[np.float64], int]:
    text = ", ".join(DIGIT_WORDS[digit] for digit in digits)
    speech = synthesize(text, rate_wpm=140)
    return speech.samples.astype(np.float64) / 32768.0, speech.sample_rate


def speech_shaped_noise(
    speech: npt.NDArray[np.float64], length: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Return `length` samples of noise with the speech's magnitude spectrum (random phases)."""
    padded = np.zeros(length)
    padded[: len(speech)] = speech
    magnitude = np.abs(np.fft.rfft(padded))
    phases = np.exp(2j * np.pi * rng.random(len(magnitude)))
    noise = np.fft.irfft(magnitude * phases, n=length)
    return noise / (np.sqrt(np.mean(noise**2)) or 1.0)


def mix_at_snr(
    speech: npt.NDArray[np.float64], noise: npt.NDArray[np.float64], snr_db: float, offset: int
) -> npt.NDArray[np.float64]:
    """Return `noise` with `speech` added from `offset`, scaled so speech RMS / noise RMS is `snr_db`
    (RMS over the speech's own span)."""
    speech_rms = np.sqrt(np.mean(speech**2)) or 1.0
    span = noise[offset : offset + len(speech)]
    noise_rms = np.sqrt(np.mean(span**2)) or 1.0
    scaled = noise * (speech_rms / noise_rms) / (10 ** (snr_db / 20))
    mixed = scaled.copy()
    mixed[offset : offset + len(speech)] += speech
    return mixed


def triplet_wav(triplet: Triplet, seed: int) -> bytes:
    """Return the triplet spoken in speech-shaped noise at its SNR, as a mono WAV file."""
    speech, rate = _spoken(triplet.digits)
    lead = int(NOISE_LEAD_SECONDS * rate)
    noise = speech_shaped_noise(speech, len(speech) + 2 * lead, np.random.default_rng(seed))
    mixed = mix_at_snr(speech, noise, triplet.snr_db, lead)
    mixed *= PEAK / (np.max(np.abs(mixed)) or 1.0)
    return to_wav_bytes(np.round(mixed * 32767).astype(np.int16), rate)


def typed_digits(text: str) -> str:
    """Return the digits the listener typed, ignoring spaces, commas and anything else."""
    return "".join(re.findall(r"\d", text))


def score(triplets: Sequence[Triplet], typed: Sequence[str]) -> int:
    """Return how many triplets were typed exactly (all three digits, in order)."""
    return sum(typed_digits(entry) == triplet.answer for triplet, entry in zip(triplets, typed, strict=True))


def passed(correct: int) -> bool:
    """Return True when `correct` triplets pass the check."""
    return correct >= PASS_MARK
