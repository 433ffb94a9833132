"""MUSHRA anchors (ITU-R BS.1534-3 §5.1): the reference low-pass filtered at 3.5 kHz (the low
anchor, mandatory) and at 7 kHz (the mid anchor, optional).

Pure DSP on 16-bit PCM WAV bytes (numpy, scipy.signal): a zero-phase Butterworth filter of order
8 (applied forwards and backwards, so 16 in effect, with no delay against the reference), which
leaves less than -60 dB of the band an octave above the cut-off.
"""

from __future__ import annotations

import io
import wave

import numpy as np

LOW_ANCHOR_HZ = 3500.0
MID_ANCHOR_HZ = 7000.0
FILTER_ORDER = 8
ANCHORS = {"low": LOW_ANCHOR_HZ, "mid": MID_ANCHOR_HZ}


def low_passed(samples: np.ndarray, sample_rate: int, cutoff_hz: float) -> np.ndarray:
    """Return float samples (time along axis 0) low-pass filtered at `cutoff_hz`, zero-phase."""
    from scipy import signal  # heavy: loaded when a MUSHRA study is created

    if not 0 < cutoff_hz < sample_rate / 2:
        raise ValueError(
            f"a {cutoff_hz / 1000:g} kHz anchor needs audio sampled above {2 * cutoff_hz / 1000:g} kHz; "
            f"the reference is sampled at {sample_rate / 1000:g} kHz"
        )
    sections = signal.butter(FILTER_ORDER, cutoff_hz, btype="lowpass", fs=sample_rate, output="sos")
    return np.asarray(signal.sosfiltfilt(sections, samples, axis=0))


def anchor_wav(data: bytes, cutoff_hz: float) -> bytes:
    """Return a 16-bit PCM WAV of the same rate and channels, low-pass filtered at `cutoff_hz`."""
    with wave.open(io.BytesIO(data)) as reader:
        if reader.getsampwidth() != 2:
            raise ValueError("expected 16-bit PCM")
        channels, rate = reader.getnchannels(), reader.getframerate()
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2").reshape(-1, channels)
    filtered = low_passed(pcm.astype(np.float64) / 32768, rate, cutoff_hz)
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(np.clip(np.round(filtered * 32768), -32768, 32767).astype("<i2").tobytes())
    return out.getvalue()
