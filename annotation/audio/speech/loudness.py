"""How loud is a recording? Integrated loudness (LUFS) and true peak, ITU-R BS.1770 (pyloudnorm).

Measured here: within 0.1 LU of ffmpeg's ebur128 on 12 clips from -46 to -17 LUFS (issue 26).
True peak is the peak of the signal oversampled four times, as BS.1770-4 annex 2 asks: a peak
between samples is what clips a converter or a codec, so it is what a studio limits.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

OVERSAMPLING = 4
FLOOR_DB = -120.0
# P.808 asks listening-test clips at one level, -26 dBov active speech level (ITU-T P.56);
# listening studies normalise every clip to -26 LUFS, the BS.1770 measure closest to it for speech.
STUDY_LEVEL_LUFS = -26.0


@dataclass(frozen=True)
class Loudness:
    integrated_lufs: float | None  # None when no 400 ms block passes the gates (too short or silent)
    true_peak_dbtp: float


def true_peak_dbtp(samples: npt.ArrayLike, sample_rate: int) -> float:
    """Return the true peak in dBTP: the peak of `samples` oversampled four times."""
    from scipy.signal import resample_poly

    array = np.asarray(samples, dtype=np.float64)
    if not array.size:
        return FLOOR_DB
    peak = float(np.max(np.abs(resample_poly(array, OVERSAMPLING, 1))))
    return round(20 * np.log10(peak), 2) if peak > 0 else FLOOR_DB


def loudness(samples: npt.ArrayLike, sample_rate: int) -> Loudness:
    """Return integrated loudness and true peak of mono float `samples` in [-1, 1]."""
    import pyloudnorm

    array = np.asarray(samples, dtype=np.float64)
    integrated: float | None = None
    if len(array) >= 0.4 * sample_rate:
        value = float(pyloudnorm.Meter(sample_rate).integrated_loudness(array))
        integrated = round(value, 2) if np.isfinite(value) else None
    return Loudness(integrated_lufs=integrated, true_peak_dbtp=true_peak_dbtp(array, sample_rate))


def normalised(
    samples: npt.ArrayLike, sample_rate: int, target_lufs: float = STUDY_LEVEL_LUFS
) -> npt.NDArray[np.float64]:
    """Return `samples` scaled to `target_lufs`, never louder than -1 dBTP (so never clipped).

    A clip whose loudness cannot be measured is returned unchanged."""
    array = np.asarray(samples, dtype=np.float64)
    measured = loudness(array, sample_rate)
    if measured.integrated_lufs is None:
        return array
    gain_db = target_lufs - measured.integrated_lufs
    gain_db = min(gain_db, -1.0 - measured.true_peak_dbtp)
    return array * 10 ** (gain_db / 20)


def normalised_wav(data: bytes, target_lufs: float = STUDY_LEVEL_LUFS) -> bytes:
    """Return a 16-bit PCM WAV (mono or stereo) scaled as `normalised` scales, same rate and channels."""
    with wave.open(io.BytesIO(data)) as reader:
        if reader.getsampwidth() != 2:
            raise ValueError("expected 16-bit PCM")
        channels, rate = reader.getnchannels(), reader.getframerate()
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2").reshape(-1, channels)
    samples = pcm.astype(np.float64) / 32768
    scaled = normalised(samples[:, 0] if channels == 1 else samples, rate, target_lufs)
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(np.clip(np.round(scaled * 32768), -32768, 32767).astype("<i2").tobytes())
    return out.getvalue()
