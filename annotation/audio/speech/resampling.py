"""The speech models' input from any recording: mono floats in [-1, 1] at 16 kHz.

Takes are stored at 16 kHz already; eSpeak NG speaks at 22.05 kHz, speech servers and systems'
response audio at whatever rate they chose, so the builder and the evaluation jobs resample here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000


def at_speech_rate(samples: npt.ArrayLike, sample_rate: int) -> npt.NDArray[np.float64]:
    """Return mono float `samples` recorded at `sample_rate` as 16 kHz floats in [-1, 1]."""
    array = np.asarray(samples, dtype=np.float64)
    if sample_rate != SAMPLE_RATE:
        from scipy.signal import resample_poly  # heavy: loaded by the jobs that resample, never the web app

        array = np.asarray(resample_poly(array, SAMPLE_RATE, sample_rate), dtype=np.float64)
    return np.clip(array, -1.0, 1.0)
