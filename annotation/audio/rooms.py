"""Real-sounding rooms and non-speech vocalisations, for the speech checks' labelled set and tests.

What an actor's laptop adds to a take (issue 39): babble (other voices talking at once), a fan
(low-passed noise with mains hum and a blade-rate wobble), white noise, mixed in at a chosen
signal-to-noise ratio; and what an expressive delivery holds besides words: laughs, breaths,
sighs, coughs and sobs. The vocalisations are synthetic (no wheel here ships recorded ones):
a laugh is voiced "ha" bursts with a falling pitch, a breath shaped noise, a sigh breath with a
falling voiced tail, a cough a sharp broadband burst with a voiced onset, a sob short trembling
voiced bursts between inhales. 16 kHz floats in [-1, 1] throughout; every function is seeded.

`delivered` makes expressive deliveries a synthesiser or a recording lacks out of a neutral one:
shouted (into clipping), child-like (formants and pitch up), elderly-like (slower, lower, with a
tremolo), whisper-like (the harmonics replaced by noise under the same spectral envelope), crying
(sobbing tremolo, pitch wobble, breathiness and broken-up phrasing) and angry (higher, louder,
faster and brighter).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy.signal import butter, istft, lfilter, resample_poly, sosfilt, stft

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


# Expressive deliveries made from a neutral reading (`delivered`).
DELIVERIES = ("shouted", "child-like", "elderly-like", "whisper-like", "crying", "angry")
SHOUT_GAIN_DB = 14.0  # over full scale at the loudest sample: the peaks clip hard
ENVELOPE_COEFFICIENTS = 24  # cepstral coefficients kept for the whisper's spectral envelope


def _whispered(samples: FloatArray, seed: int) -> FloatArray:
    """Return `samples` with the voice's harmonics replaced by noise under the same spectral
    envelope (cepstrally smoothed): no pitch left, the words' formants kept, same power."""
    _, _, spectrum = stft(samples, fs=RATE, nperseg=512, noverlap=384)
    magnitude = np.abs(spectrum) + 1e-9
    cepstrum = np.fft.irfft(np.log(magnitude), axis=0)
    cepstrum[ENVELOPE_COEFFICIENTS:-ENVELOPE_COEFFICIENTS] = 0.0
    envelope = np.exp(np.fft.rfft(cepstrum, axis=0).real)[: magnitude.shape[0]]
    phase = np.exp(2j * np.pi * np.random.default_rng(seed).random(magnitude.shape))
    _, whisper = istft(envelope * phase, fs=RATE, nperseg=512, noverlap=384)
    whisper = np.asarray(whisper[: len(samples)], dtype=np.float64)
    return np.asarray(whisper * np.sqrt(np.mean(samples**2) / max(float(np.mean(whisper**2)), 1e-20)))


def _crying(samples: FloatArray, seed: int) -> FloatArray:
    """Return `samples` as a crying reading: the pitch wobbles (a 7 Hz vibrato of about 5%, by a
    moving delay), the level sobs (a 4-6 Hz tremolo of 45% depth whose rate drifts), the voice is
    breathy (its whispered copy at half the level mixed in) and the phrasing breaks: 0.15-0.35 s of
    silence is put into two of the quietest 30 ms stretches inside the reading (between words)."""
    rng = np.random.default_rng(seed)
    count = len(samples)
    t = np.arange(count) / RATE
    delay = 0.0012 * RATE * np.sin(2 * np.pi * 7.0 * t)  # samples; the pitch moves by 2*pi*7*1.2 ms
    wobbled = np.interp(
        np.arange(count) - 0.0015 * RATE - delay, np.arange(count), samples, left=0.0, right=0.0
    )
    rate = 5.0 + np.cumsum(rng.normal(0.0, 0.002, count))  # around 5 Hz, drifting
    sob = 1.0 - 0.45 * (0.5 + 0.5 * np.sin(2 * np.pi * np.cumsum(np.clip(rate, 4.0, 6.0)) / RATE))
    breathy = wobbled * sob + 0.5 * _whispered(samples, seed) * sob
    window = round(0.03 * RATE)
    frames = _frames(breathy, window)
    powers = np.mean(frames**2, axis=1)
    inner = np.arange(len(powers))[len(powers) // 5 : len(powers) * 4 // 5]
    if inner.size < 2:
        return np.asarray(breathy, dtype=np.float64)
    quiet = np.sort(
        rng.choice(inner[np.argsort(powers[inner])[: max(2, inner.size * 3 // 10)]], 2, replace=False)
    )
    pieces, last = [], 0
    for frame in quiet:
        cut = int(frame) * window + window // 2
        pieces += [breathy[last:cut], np.zeros(round(rng.uniform(0.15, 0.35) * RATE))]
        last = cut
    pieces.append(breathy[last:])
    return np.asarray(np.concatenate(pieces), dtype=np.float64)


ANGRY_GAIN_DB = 8.0


def _angry(samples: FloatArray) -> FloatArray:
    """Return `samples` as an angry reading: played 1.1x (pitch and formants up 10%, faster), the
    spectrum tilted brighter (a first-difference pre-emphasis of 0.7 mixed in, as a pressed voice's
    stronger highs) and ANGRY_GAIN_DB louder into soft (tanh) saturation."""
    fast = np.asarray(resample_poly(samples, 10, 11), dtype=np.float64)
    bright = fast + 0.7 * np.diff(fast, prepend=0.0) * 2.0
    peak = max(float(np.max(np.abs(bright))), 1e-9)
    return np.asarray(np.tanh(bright / peak * 10 ** (ANGRY_GAIN_DB / 20)), dtype=np.float64)


def delivered(samples: FloatArray, delivery: str, seed: int = 0) -> FloatArray:
    """Return a neutral 16 kHz reading as one of DELIVERIES: shouted (SHOUT_GAIN_DB over full
    scale, hard clipped), child-like (played 1.25x: pitch and formants up, faster), elderly-like
    (played 0.85x: slower and lower, with a 6 Hz tremolo of 30% depth), whisper-like, crying
    (`_crying`) or angry (`_angry`)."""
    array = np.asarray(samples, dtype=np.float64)
    if delivery == "shouted":
        gain = 10 ** (SHOUT_GAIN_DB / 20) / max(float(np.max(np.abs(array))), 1e-9)
        return np.clip(array * gain, -1.0, 1.0)
    if delivery == "child-like":
        return np.asarray(resample_poly(array, 4, 5), dtype=np.float64)
    if delivery == "elderly-like":
        slow = np.asarray(resample_poly(array, 20, 17), dtype=np.float64)
        return np.clip(slow * (1.0 + 0.3 * np.sin(2 * np.pi * 6.0 * np.arange(len(slow)) / RATE)), -1.0, 1.0)
    if delivery == "whisper-like":
        return _whispered(array, seed)
    if delivery == "crying":
        return _crying(array, seed)
    if delivery == "angry":
        return _angry(array)
    raise ValueError(f"unknown delivery {delivery!r}; expected one of {', '.join(DELIVERIES)}")
