"""Acoustic measurements of one take: levels, loudness, pitch, intensity and intonation.

These are the machine drafts of the prosody fields annotators label (pitch, energy, speaking
rate, intonation; EchoChat paper, appendix B.3) and the numbers audio QC decides on. Speaking
rate needs the script's forced alignment, so it is measured by `annotation.audio.speech.rate`, the
one rate rule. Samples are floats in [-1, 1] (integer PCM is scaled); nothing here touches files or
Django.

Conventions:
- dBFS is 20*log10 of an amplitude relative to full scale (a full-scale sine has an RMS of
  -3.01 dBFS); digital silence reads DBFS_FLOOR instead of minus infinity.
- Intensity follows Praat: dB relative to 2e-5 with samples taken as pascals, so a full-scale
  sine reads about 91 dB.
- Pitch and intensity are Praat's (through parselmouth), every 10 ms; f0 is NaN when unvoiced.
  Pitch is tracked in two passes within a range fitted to the speaker, and octave jumps are
  repaired before anything reads it (``annotation.audio.pitch``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from webapp.lib.vocabulary import INTONATIONS

FloatArray = npt.NDArray[np.float64]
# One of the perception vocabulary's intonation values, named for `classify_intonation`.
Intonation = str
RISING, FALLING, RISING_FALLING, FALLING_RISING, FLAT = INTONATIONS

DBFS_FLOOR = -120.0
# A sample this close to full scale (-0.09 dBFS) counts as clipped: resampling and lossy codecs
# round a flattened peak to values just under 1.0, so testing for exactly 1.0 would miss them.
CLIPPING_LEVEL = 0.99

FRAME_SECONDS = 0.01
# A 10 ms frame is silent when it is this far below the loudest frame, or below the absolute floor:
# a relative threshold follows the recording's gain, the floor catches near-digital silence.
SILENCE_BELOW_LOUDEST_DB = 35.0
SILENCE_FLOOR_DBFS = -60.0

# The fixed range of a one-pass pitch track (the benches time it); the analysis fits its range to
# the speaker instead (annotation.audio.pitch). Intensity's window follows PITCH_FLOOR_HZ.
PITCH_FLOOR_HZ = 75.0
PITCH_CEILING_HZ = 600.0  # high enough for raised, emotional voices and children
INTENSITY_FLOOR_DB = 0.0  # Praat reports digital silence as -300 dB
# Praat needs a few pitch periods to analyse anything (3 / PITCH_FLOOR_HZ for pitch, 6.4 / floor
# for intensity); below this we report no contours rather than fail.
MIN_PRAAT_SECONDS = 0.1

# Intonation: a movement of at least this many semitones counts. Two semitones is well above the
# just-noticeable difference for pitch movements in speech (about 1-1.5 st) and below a typical
# accent excursion (3-6 st), so accents register and jitter does not.
INTONATION_THRESHOLD_SEMITONES = 2.0
MIN_VOICED_FRAMES_FOR_INTONATION = 10
# Start and end of a contour are the medians of its first and last fifth; a peak or trough only
# makes a rise-fall or fall-rise when it lies between them.
INTONATION_EDGE_FRACTION = 0.2

# Spectral tilt as eGeMAPS's alpha ratio: energy from 1 to 5 kHz against 50 Hz to 1 kHz. Raised,
# tense voices put more energy high (a flatter tilt, a higher ratio); soft, lax ones less.
TILT_LOW_BAND_HZ = (50.0, 1000.0)
TILT_HIGH_BAND_HZ = (1000.0, 5000.0)

# A word of a script: letters and digits, with inner apostrophes ("can't", "it’s").
WORD = re.compile(r"\w+(?:['’]\w+)*")


@dataclass(frozen=True, eq=False)
class AcousticAnalysis:
    duration_seconds: float
    sample_rate: int
    peak_dbfs: float
    rms_dbfs: float
    clipping_ratio: float
    silence_ratio: float
    integrated_loudness_lufs: float | None  # None when no 400 ms block passes the BS.1770 gates
    pitch_times: FloatArray
    pitch_hz: FloatArray  # NaN where unvoiced
    intensity_times: FloatArray
    intensity_db: FloatArray
    voiced_ratio: float
    median_f0_hz: float | None
    f0_low_hz: float | None  # 5th percentile of voiced f0: robust to stray octave errors
    f0_high_hz: float | None  # 95th percentile
    f0_range_semitones: float | None
    mean_intensity_db: float | None  # energy average, as Praat's "Get mean... energy"
    spectral_tilt_db: float | None  # alpha ratio of the sounding frames (`spectral_tilt_db`)
    intonation: Intonation | None  # None when there is too little voiced speech to judge


def as_float_samples(samples: npt.ArrayLike) -> FloatArray:
    """Return `samples` as float64, integer PCM scaled to [-1, 1]."""
    array = np.asarray(samples)
    if array.ndim != 1:
        raise ValueError(f"expected mono samples (one dimension), got shape {array.shape}")
    if np.issubdtype(array.dtype, np.integer):
        return array.astype(np.float64) / float(-np.iinfo(array.dtype).min)
    return np.asarray(array, dtype=np.float64)  # no copy when already float64


def amplitude_to_dbfs(amplitude: float) -> float:
    """Return `amplitude` (relative to full scale) in dBFS, never below DBFS_FLOOR."""
    if amplitude <= 0:
        return DBFS_FLOOR
    return max(DBFS_FLOOR, 20.0 * math.log10(amplitude))


def peak_dbfs(samples: npt.ArrayLike) -> float:
    """Return the level of the largest absolute sample in dBFS."""
    array = as_float_samples(samples)
    return amplitude_to_dbfs(float(np.max(np.abs(array)))) if array.size else DBFS_FLOOR


def rms_dbfs(samples: npt.ArrayLike) -> float:
    """Return the RMS level in dBFS."""
    array = as_float_samples(samples)
    return amplitude_to_dbfs(float(np.sqrt(np.mean(array**2)))) if array.size else DBFS_FLOOR


def clipping_ratio(samples: npt.ArrayLike) -> float:
    """Return the fraction of samples at (or within 0.09 dB of) full scale."""
    array = as_float_samples(samples)
    return float(np.mean(np.abs(array) >= CLIPPING_LEVEL)) if array.size else 0.0


def frame_levels_dbfs(samples: FloatArray, sample_rate: int) -> FloatArray:
    """Return the RMS level in dBFS of each consecutive 10 ms frame (a partial last frame is dropped)."""
    frame = max(1, round(FRAME_SECONDS * sample_rate))
    count = len(samples) // frame
    if count == 0:
        return np.zeros(0)
    power = np.mean(samples[: count * frame].reshape(count, frame) ** 2, axis=1)
    with np.errstate(divide="ignore"):
        return np.maximum(DBFS_FLOOR, 10.0 * np.log10(power))


def non_silent_frames(levels_dbfs: FloatArray) -> npt.NDArray[np.bool_]:
    """Return which frames carry sound, by SILENCE_BELOW_LOUDEST_DB and SILENCE_FLOOR_DBFS."""
    if levels_dbfs.size == 0:
        return np.zeros(0, dtype=bool)
    threshold = max(SILENCE_FLOOR_DBFS, float(np.max(levels_dbfs)) - SILENCE_BELOW_LOUDEST_DB)
    return levels_dbfs >= threshold


def k_weighting_filters(
    sample_rate: int,
) -> tuple[tuple[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]:
    """Return the two biquads (b, a) of the ITU-R BS.1770 K-weighting filter at `sample_rate`.

    BS.1770 tabulates coefficients for 48 kHz only. These are the analog prototypes fitted to that
    table (a +4 dB high shelf near 1.7 kHz, then a 38 Hz high-pass, as libebur128 derives them)
    mapped to any rate with the bilinear transform; at 48 kHz they reproduce the table to its printed
    precision.
    The high-pass keeps the table's unnormalised numerator (1, -2, 1): the -0.691 dB in the
    loudness formula was calibrated with it.
    """
    shelf_hz, shelf_gain_db, shelf_q = 1681.974450955533, 3.999843853973347, 0.7071752369554196
    k = math.tan(math.pi * shelf_hz / sample_rate)
    high_gain = 10.0 ** (shelf_gain_db / 20.0)
    band_gain = high_gain**0.4996667741545416
    a0 = 1.0 + k / shelf_q + k * k
    shelf_b = np.array(
        [
            (high_gain + band_gain * k / shelf_q + k * k) / a0,
            2.0 * (k * k - high_gain) / a0,
            (high_gain - band_gain * k / shelf_q + k * k) / a0,
        ]
    )
    shelf_a = np.array([1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / shelf_q + k * k) / a0])

    pass_hz, pass_q = 38.13547087602444, 0.5003270373238773
    k = math.tan(math.pi * pass_hz / sample_rate)
    a0 = 1.0 + k / pass_q + k * k
    pass_b = np.array([1.0, -2.0, 1.0])
    pass_a = np.array([1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / pass_q + k * k) / a0])
    return (shelf_b, shelf_a), (pass_b, pass_a)


def integrated_loudness_lufs(samples: npt.ArrayLike, sample_rate: int) -> float | None:
    """Return the BS.1770-4 integrated loudness of mono `samples` in LUFS.

    K-weighting, mean square over 400 ms blocks every 100 ms, an absolute gate at -70 LUFS and
    a relative gate 10 LU below the loudness of the blocks that pass it. Return None when no
    block survives (digital silence, or under 400 ms of audio).
    """
    from scipy import signal  # heavy (as is parselmouth below): loaded by analysis, never by the web app

    array = as_float_samples(samples)
    (shelf_b, shelf_a), (pass_b, pass_a) = k_weighting_filters(sample_rate)
    weighted = signal.lfilter(pass_b, pass_a, signal.lfilter(shelf_b, shelf_a, array))
    block, step = round(0.4 * sample_rate), round(0.1 * sample_rate)
    if len(weighted) < block:
        return None
    cumulative = np.concatenate([[0.0], np.cumsum(weighted**2)])
    starts = np.arange(0, len(weighted) - block + 1, step)
    block_power = (cumulative[starts + block] - cumulative[starts]) / block

    def loudness(power: FloatArray | float) -> FloatArray:
        with np.errstate(divide="ignore"):
            return np.asarray(-0.691 + 10.0 * np.log10(power))

    above_absolute = block_power[loudness(block_power) > -70.0]
    if above_absolute.size == 0:
        return None
    relative_gate = float(loudness(float(np.mean(above_absolute)))) - 10.0
    gated = above_absolute[loudness(above_absolute) > relative_gate]
    return float(loudness(float(np.mean(gated))))


def classify_intonation(semitones: FloatArray) -> Intonation | None:
    """Return the global melodic shape of a voiced pitch contour in semitones (time order).

    The contour is smoothed with a Savitzky-Golay filter spanning a fifth of it, so the shape of
    the whole utterance counts rather than each syllable's accent. Start and end are the medians
    of the first and last fifth. A peak between them at least INTONATION_THRESHOLD_SEMITONES
    above both is rising-falling, a trough as far below both falling-rising (the larger excursion
    wins if there are both); otherwise the end against the start decides rising, falling or flat.
    """
    from scipy import signal

    if semitones.size < MIN_VOICED_FRAMES_FOR_INTONATION:
        return None
    window = max(5, semitones.size // 5) | 1  # odd, as the filter requires; never above the size
    smooth = signal.savgol_filter(semitones, window, 2)
    edge = max(1, round(INTONATION_EDGE_FRACTION * smooth.size))
    start, end = float(np.median(smooth[:edge])), float(np.median(smooth[-edge:]))
    inner = smooth[edge:-edge]
    threshold = INTONATION_THRESHOLD_SEMITONES
    peak_excursion = float(np.max(inner)) - max(start, end) if inner.size else 0.0
    trough_excursion = min(start, end) - float(np.min(inner)) if inner.size else 0.0
    if max(peak_excursion, trough_excursion) >= threshold:
        return RISING_FALLING if peak_excursion >= trough_excursion else FALLING_RISING
    if end - start >= threshold:
        return RISING
    if start - end >= threshold:
        return FALLING
    return FLAT


def spectral_tilt_db(samples: FloatArray, sample_rate: int, sounding: npt.NDArray[np.bool_]) -> float | None:
    """Return the alpha ratio in dB of the `sounding` 10 ms frames of `samples`: the power from 1 to
    5 kHz over the power from 50 Hz to 1 kHz, from one spectrum of all of them (Hann-windowed
    frames, averaged); None without sound or when the rate cannot hold 5 kHz."""
    frame = max(1, round(FRAME_SECONDS * sample_rate))
    if not sounding.any() or sample_rate < 2 * TILT_HIGH_BAND_HZ[1]:
        return None
    frames = samples[: len(sounding) * frame].reshape(len(sounding), frame)[sounding]
    power = np.mean(np.abs(np.fft.rfft(frames * np.hanning(frame), axis=1)) ** 2, axis=0)
    hz = np.fft.rfftfreq(frame, 1.0 / sample_rate)

    def band(edges: tuple[float, float]) -> float:
        return float(np.sum(power[(hz >= edges[0]) & (hz < edges[1])]))

    low, high = band(TILT_LOW_BAND_HZ), band(TILT_HIGH_BAND_HZ)
    return 10.0 * math.log10(high / low) if low > 0 and high > 0 else None


def count_words(transcript: str) -> int:
    """Return the number of words in `transcript` ("don't" is one word)."""
    return len(WORD.findall(transcript))


def analyze(samples: npt.ArrayLike, sample_rate: int) -> AcousticAnalysis:
    """Return the acoustic analysis of mono `samples` (speaking rate: `annotation.audio.speech.rate`)."""
    array = as_float_samples(samples)
    duration = len(array) / sample_rate

    levels = frame_levels_dbfs(array, sample_rate)
    sounding = non_silent_frames(levels)

    pitch_times, pitch_hz, intensity_times, intensity_db = _praat_contours(array, sample_rate)
    voiced_hz = pitch_hz[~np.isnan(pitch_hz)]
    median_f0: float | None = None
    f0_low: float | None = None
    f0_high: float | None = None
    f0_range: float | None = None
    intonation: Intonation | None = None
    if voiced_hz.size:
        median_f0 = float(np.median(voiced_hz))
        low, high = (float(v) for v in np.percentile(voiced_hz, [5, 95]))
        f0_low, f0_high, f0_range = low, high, 12.0 * math.log2(high / low)
        intonation = classify_intonation(12.0 * np.log2(voiced_hz / median_f0))

    return AcousticAnalysis(
        duration_seconds=duration,
        sample_rate=sample_rate,
        peak_dbfs=peak_dbfs(array),
        rms_dbfs=rms_dbfs(array),
        clipping_ratio=clipping_ratio(array),
        silence_ratio=float(1.0 - np.mean(sounding)) if sounding.size else 1.0,
        integrated_loudness_lufs=integrated_loudness_lufs(array, sample_rate),
        pitch_times=pitch_times,
        pitch_hz=pitch_hz,
        intensity_times=intensity_times,
        intensity_db=intensity_db,
        voiced_ratio=float(voiced_hz.size / pitch_hz.size) if pitch_hz.size else 0.0,
        median_f0_hz=median_f0,
        f0_low_hz=f0_low,
        f0_high_hz=f0_high,
        f0_range_semitones=f0_range,
        mean_intensity_db=(
            float(10.0 * np.log10(np.mean(10.0 ** (intensity_db / 10.0)))) if intensity_db.size else None
        ),
        spectral_tilt_db=spectral_tilt_db(array, sample_rate, sounding),
        intonation=intonation,
    )


def _praat_contours(
    samples: FloatArray, sample_rate: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Return the pitch (times, Hz with NaN unvoiced; ``annotation.audio.pitch``) and Praat's
    intensity (times, dB) contours."""
    empty = np.zeros(0)
    if len(samples) / sample_rate < MIN_PRAAT_SECONDS:
        return empty, empty, empty, empty
    import parselmouth

    from annotation.audio.pitch import praat_pitch

    pitch_times, pitch_hz = praat_pitch(samples, sample_rate, FRAME_SECONDS)
    sound = parselmouth.Sound(samples, sampling_frequency=sample_rate)
    intensity = sound.to_intensity(minimum_pitch=PITCH_FLOOR_HZ, time_step=FRAME_SECONDS)
    intensity_db = np.maximum(INTENSITY_FLOOR_DB, np.asarray(intensity.values[0], dtype=np.float64))
    return pitch_times, pitch_hz, np.asarray(intensity.xs()), intensity_db


def scalar_features(analysis: AcousticAnalysis) -> dict[str, float | int | str | None]:
    """Return the analysis without its contours, as JSON-safe values (for a JSON field)."""
    return {
        "duration_seconds": analysis.duration_seconds,
        "peak_dbfs": analysis.peak_dbfs,
        "rms_dbfs": analysis.rms_dbfs,
        "clipping_ratio": analysis.clipping_ratio,
        "silence_ratio": analysis.silence_ratio,
        "integrated_loudness_lufs": analysis.integrated_loudness_lufs,
        "voiced_ratio": analysis.voiced_ratio,
        "median_f0_hz": analysis.median_f0_hz,
        "f0_low_hz": analysis.f0_low_hz,
        "f0_high_hz": analysis.f0_high_hz,
        "f0_range_semitones": analysis.f0_range_semitones,
        "mean_intensity_db": analysis.mean_intensity_db,
        "spectral_tilt_db": analysis.spectral_tilt_db,
        "intonation": analysis.intonation,
    }
