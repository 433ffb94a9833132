"""Real-sounding rooms and non-speech vocalisations, for the speech checks' labelled set and tests.

What an actor's laptop adds to a take (issue 39): babble (other voices talking at once), a fan
(low-passed noise with mains hum and a blade-rate wobble), white noise, mixed in at a chosen
signal-to-noise ratio; and what an expressive delivery holds besides words: laughs, breaths,
sighs, coughs and sobs. The vocalisations are synthetic (no wheel here ships recorded ones):
a laugh is voiced "ha" bursts with a falling pitch, a breath shaped noise, a sigh breath with a
falling voiced tail, a cough a sharp broadband burst with a voiced onset, a sob short trembling
voiced bursts between inhales. 16 kHz floats in [-1, 1] throughout; every function is seeded.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy.signal import butter, lfilter, resample_poly, sosfilt

RATE = 16_000
FloatArray = npt.NDArray[np.float64]

BABBLE_TEXTS = (
    ("en-gb", "We could always take the early train and be there before lunch"),
    ("en-us+m3", "I told him twice already but he never listens to a word I say"),
    ("en-us+f2", "The results came back this morning and nobody expected them"),
    ("en-gb+f4", "Put the boxes in the corner and we will sort them out later"),
    ("en-us+m7", "Have you seen the new schedule for the second half of the year"),
    ("en-us+f5", "She said the concert was cancelled because of the storm last night"),
)
EVENT_KINDS = ("laugh", "breath", "sigh", "cough", "sob")


def active_power(samples: FloatArray) -> float:
    """Return the mean power of the 32 ms frames within 40 dB of the loudest (the speech)."""
    frames = _frames(samples, 512)
    power = np.mean(np.square(frames), axis=1)
    if not power.size or power.max() <= 0:
        return 0.0
    return float(np.mean(power[power >= power.max() * 1e-4]))


def mixed(speech: FloatArray, noise: FloatArray, snr_db: float) -> FloatArray:
    """Return `speech` with `noise` (looped to its length) `snr_db` below its active speech power."""
    noise = np.resize(noise, len(speech))
    scale = np.sqrt(active_power(speech) / 10 ** (snr_db / 10) / max(float(np.mean(noise**2)), 1e-20))
    return np.clip(speech + scale * noise, -1.0, 1.0)


def white(seconds: float, seed: int = 0) -> FloatArray:
    """Return unit-power white noise."""
    return np.random.default_rng(seed).normal(0.0, 1.0, round(seconds * RATE))


def fan(seconds: float, seed: int = 0) -> FloatArray:
    """Return fan-like noise: low-passed (and pinkish) noise, 50 Hz hum and its harmonics, and a
    slow blade-rate wobble in its level; unit power."""
    count = round(seconds * RATE)
    rng = np.random.default_rng(seed)
    noise = lfilter([1.0], [1.0, -0.97], rng.normal(0.0, 1.0, count))  # a -6 dB/octave tilt
    noise = sosfilt(butter(4, 1800, "low", fs=RATE, output="sos"), noise)
    time = np.arange(count) / RATE
    hum = sum(np.sin(2 * np.pi * 50 * k * time + k) / k for k in (1, 2, 3))
    wobble = 1.0 + 0.15 * np.sin(2 * np.pi * 7.5 * time)
    total = wobble * noise / np.std(noise) + 0.4 * hum
    return np.asarray(total / np.sqrt(np.mean(total**2)), dtype=np.float64)


@lru_cache(maxsize=4)
def _babble_voices() -> tuple[FloatArray, ...]:
    from annotation.audio.synthesis import synthesize

    voices = []
    for voice, text in BABBLE_TEXTS:
        speech = synthesize(text, voice=voice)
        samples = resample_poly(speech.samples.astype(np.float64) / 32768, RATE, speech.sample_rate)
        voices.append(np.asarray(samples, dtype=np.float64))
    return tuple(voices)


def babble(seconds: float, seed: int = 0, talkers: int = 5) -> FloatArray:
    """Return babble: `talkers` other eSpeak NG voices talking at once (each looped and started at
    a random point), unit power."""
    count = round(seconds * RATE)
    rng = np.random.default_rng(seed)
    voices = _babble_voices()
    total = np.zeros(count)
    for index in rng.choice(len(voices), size=min(talkers, len(voices)), replace=False):
        voice = voices[int(index)]
        voice = voice / max(np.sqrt(active_power(voice)), 1e-9)
        start = int(rng.integers(0, len(voice)))
        total += np.resize(np.roll(voice, -start), count)
    return np.asarray(total / np.sqrt(np.mean(total**2)), dtype=np.float64)


NOISES: dict[str, Callable[..., FloatArray]] = {"white": white, "fan": fan, "babble": babble}


def _resonated(signal: FloatArray, formants: tuple[float, ...]) -> FloatArray:
    out = np.zeros_like(signal)
    for frequency in formants:
        band = (max(frequency * 0.75, 60.0), min(frequency * 1.3, RATE / 2 - 100))
        out += sosfilt(butter(2, band, "band", fs=RATE, output="sos"), signal)
    return out


def _voiced(f0: FloatArray, rng: np.random.Generator, breathiness: float = 0.3) -> FloatArray:
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    buzz = sum(np.sin(k * phase) / k for k in range(1, 12))
    return np.asarray(buzz + breathiness * rng.normal(0.0, 1.0, len(f0)), dtype=np.float64)


def _envelope(count: int, attack: float, release: float) -> FloatArray:
    up, down = max(1, round(attack * count)), max(1, round(release * count))
    body = np.ones(count)
    body[:up] = np.linspace(0.0, 1.0, up)
    body[count - down :] = np.minimum(body[count - down :], np.linspace(1.0, 0.0, down))
    return body


def vocal_event(kind: str, seed: int = 0) -> FloatArray:
    """Return one synthetic `kind` (see EVENT_KINDS), peak-normalised to 0.5."""
    rng = np.random.default_rng(seed)
    pieces: list[FloatArray] = []
    if kind == "laugh":
        f0 = rng.uniform(220, 300)
        for number in range(int(rng.integers(4, 7))):
            count = int(rng.uniform(0.09, 0.13) * RATE)
            pitch = np.linspace(f0, f0 * 0.9, count) * (0.97**number)
            sound = _resonated(_voiced(pitch, rng, 0.6), (750.0, 1200.0, 2600.0))
            pieces += [sound * _envelope(count, 0.1, 0.5), np.zeros(round(rng.uniform(0.07, 0.1) * RATE))]
    elif kind == "breath":
        count = int(rng.uniform(0.45, 0.7) * RATE)
        noise = sosfilt(butter(2, (400, 3500), "band", fs=RATE, output="sos"), rng.normal(0, 1, count))
        pieces.append(noise * np.hanning(count))
    elif kind == "sigh":
        count = int(rng.uniform(0.7, 1.0) * RATE)
        noise = sosfilt(butter(2, (300, 3000), "band", fs=RATE, output="sos"), rng.normal(0, 1, count))
        pitch = np.linspace(rng.uniform(200, 240), 130, count)
        tail = _resonated(_voiced(pitch, rng, 1.0), (600.0, 1100.0)) * np.linspace(0.0, 1.0, count)
        pieces.append((noise / np.std(noise) + 0.8 * tail / np.std(tail)) * _envelope(count, 0.2, 0.5))
    elif kind == "cough":
        for _ in range(int(rng.integers(1, 3))):
            count = int(rng.uniform(0.15, 0.25) * RATE)
            burst = rng.normal(0, 1, count) + 0.5 * _voiced(np.full(count, rng.uniform(150, 250)), rng)
            burst = sosfilt(butter(2, (200, 5000), "band", fs=RATE, output="sos"), burst)
            pieces += [burst * np.exp(-np.arange(count) / (0.06 * RATE)), np.zeros(round(0.12 * RATE))]
    elif kind == "sob":
        for _ in range(int(rng.integers(3, 5))):
            count = int(rng.uniform(0.15, 0.25) * RATE)
            time = np.arange(count) / RATE
            pitch = rng.uniform(260, 340) * (1 + 0.06 * np.sin(2 * np.pi * 9 * time))
            sound = _resonated(_voiced(pitch, rng, 0.5), (500.0, 1000.0, 2500.0)) * _envelope(count, 0.2, 0.4)
            inhale_count = round(0.12 * RATE)
            inhale = sosfilt(
                butter(2, (800, 4000), "band", fs=RATE, output="sos"), rng.normal(0, 1, inhale_count)
            )
            pieces += [sound, 0.3 * inhale * np.hanning(inhale_count) * np.max(np.abs(sound)) / 3]
    else:
        raise ValueError(f"unknown vocal event {kind!r}; expected one of {', '.join(EVENT_KINDS)}")
    event = np.concatenate(pieces)
    return np.asarray(0.5 * event / np.max(np.abs(event)), dtype=np.float64)


# How loud each vocalisation is against the speech around it (active power, dB): a breath is quiet,
# a laugh or a cough about as loud as speech.
EVENT_LEVEL_DB = {"laugh": -3.0, "breath": -16.0, "sigh": -10.0, "cough": -2.0, "sob": -6.0}


def at_level(event: FloatArray, speech: FloatArray, level_db: float) -> FloatArray:
    """Return `event` scaled to `level_db` against the active power of `speech`."""
    scale = np.sqrt(active_power(speech) * 10 ** (level_db / 10) / max(active_power(event), 1e-20))
    return np.asarray(event * scale, dtype=np.float64)


def _frames(samples: FloatArray, size: int) -> FloatArray:
    count = len(samples) // size
    return np.asarray(samples[: count * size], dtype=np.float64).reshape(count, size)
