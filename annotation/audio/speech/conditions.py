"""What a take was recorded in: its signal-to-noise ratio, from where the VAD hears speech (issue 39).

Every flag is only as good as the conditions it was measured under: at 0 dB SNR the aligner finds
no path through the right script and the speaker embedding moves as far as another voice's. So
each take's SNR is estimated and reported with its flags, and a check below the SNR where it was
measured to hold says "too noisy to check" instead of a verdict.

The estimate: speech power is the mean power of the 32 ms windows inside silero-vad's speech
regions; noise power the median of the windows outside them, a little away from their edges (the
median, so a laugh or a cough in the silence does not count as noise). A take with less than
MIN_NOISE_SECONDS outside speech takes its quietest tenth of windows as the noise instead. The
speech windows hold the noise as well, so SNR = (speech - noise) / noise. Measured on the labelled
set (bench/speech_checks.py): within a few dB of the mixed SNR for white, fan and babble noise at
20, 10 and 0 dB; babble reads lower than mixed (other voices in the pauses).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000
WINDOW = 512  # the VAD's windows (32 ms)
EDGE_SECONDS = 0.1  # windows this close to a speech region are neither speech nor noise
MIN_NOISE_SECONDS = 0.3
MAX_SNR_DB = 60.0  # digital silence around the speech reads as this, not infinity
FLOOR_POWER = 1e-10  # -100 dBFS: the quietest noise power counted

# Below these SNRs a check says "too noisy to check" rather than a verdict: the SNRs where the
# labelled set showed the check failing (bench/speech_checks.py; docs/benchmarks.md).
MIN_SNR_SCRIPT_DB = 5.0
MIN_SNR_SPEAKER_DB = 5.0


@dataclass(frozen=True)
class Conditions:
    snr_db: float | None  # None when the VAD heard no speech
    noise_dbfs: float  # the noise floor's power in dB below full scale
    speech_dbfs: float | None

    def as_dict(self) -> dict[str, float | None]:
        """Return the figures as JSON-ready values (stored on the take)."""
        return {"snr_db": self.snr_db, "noise_dbfs": self.noise_dbfs, "speech_dbfs": self.speech_dbfs}


def window_powers(samples: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return the mean power of each whole 32 ms window of `samples`."""
    count = len(samples) // WINDOW
    frames = np.asarray(samples[: count * WINDOW], dtype=np.float64).reshape(count, WINDOW)
    return np.asarray(np.mean(np.square(frames), axis=1), dtype=np.float64)


def _db(power: float) -> float:
    return round(10 * float(np.log10(max(power, FLOOR_POWER))), 1)


def recording_conditions(
    samples: npt.NDArray[np.float64], regions: Sequence[tuple[float, float]]
) -> Conditions:
    """Return the SNR and noise floor of 16 kHz `samples` whose speech is in `regions` (seconds)."""
    powers = window_powers(np.asarray(samples, dtype=np.float64))
    if not powers.size:
        return Conditions(None, _db(0.0), None)
    centres = (np.arange(len(powers)) + 0.5) * WINDOW / SAMPLE_RATE
    speech = np.zeros(len(powers), dtype=bool)
    near = np.zeros(len(powers), dtype=bool)
    for start, end in regions:
        speech |= (centres >= start) & (centres <= end)
        near |= (centres >= start - EDGE_SECONDS) & (centres <= end + EDGE_SECONDS)
    outside = powers[~near]
    if len(outside) * WINDOW / SAMPLE_RATE >= MIN_NOISE_SECONDS:
        noise = float(np.median(outside))
    else:
        noise = float(np.mean(np.sort(powers)[: max(1, len(powers) // 10)]))
    noise = max(noise, FLOOR_POWER)
    if not speech.any():
        return Conditions(None, _db(noise), None)
    loud = float(np.mean(powers[speech]))
    snr = 10 * float(np.log10(max(loud - noise, FLOOR_POWER) / noise))
    return Conditions(round(min(snr, MAX_SNR_DB), 1), _db(noise), _db(loud))
