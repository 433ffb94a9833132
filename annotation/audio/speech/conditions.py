"""What a take was recorded in: its signal-to-noise ratio, from where the VAD hears speech (issue 39).

Every flag is only as good as the conditions it was measured under: at 0 dB SNR the aligner finds
no path through the right script and the speaker embedding moves as far as another voice's. So
each take's SNR is estimated and reported with its flags, and a check below the SNR where it was
measured to hold says "too noisy to check" instead of a verdict.

The estimate: speech power is the mean power of the 32 ms windows inside silero-vad's speech
regions; noise power the SILENCE_PERCENTILE-th percentile of the windows outside them, a little away
from their edges (a low percentile, so a laugh or a cough in the silence, or whispered words the
VAD does not hear as speech, do not count as noise: with the median a clean whispered take read
2.4 dB and was "too noisy to check"). The speech windows hold the noise as well, so
SNR = (speech - noise) / noise.

Speech-like noise is the hard case: in babble (other voices) the VAD hears speech across the whole
take, room before and after included, so there is no silence to measure. Such a take (less than
MIN_NOISE_SECONDS outside speech) takes the mean of its quietest QUIET_SHARE of windows as the
noise: the dips between the actor's syllables, where mostly the room is heard. Measured on the
labelled set's held-out takes (bench/speech_checks.py, docs/benchmarks.md), estimate minus mixed
SNR, median: white -0.1 dB at 10 and 0 dB; fan +1.1 to +1.2 at 20 and 10 dB, +2.1 at 0 dB (its
level wobbles, and a low percentile of it is below its mean); babble -0.2 at 20 dB, +0.1 at 10 dB
and +3.1 at 0 dB (it read +6 with the quietest tenth, so a wrong sentence in 0 dB babble passed
the SNR gate and could "match"). A tightly trimmed clean take (no silence at all) reads about
14 dB, not 60: the quietest windows of speech alone are its weak sounds.

How much speech was heard (`Conditions.speech_seconds`): the VAD's speech windows at least
AUDIBLE_DB above that noise. The VAD's own regions will not do: in babble it hears speech across
the whole take, so a 0.8 s "five five" with a second of room read 1.7 s. Counted 6 dB above the
noise, eSpeak readings (short phrases and a sentence, four voices) read, against their clean
count, 0.83 (0.59-0.96) in babble at 10 dB, 0.69 in fan and 0.60 in white noise, 1.00 (at most
1.11) in babble at 20 dB; 3 dB above it, babble at 10 dB read up to 1.55 times the speech, which
would let a short take through. A speaker embedding from about a second of speech is unreliable
(issue 39), so the speaker check says "too short to check" below its minimum
(`speaker.MIN_SPEECH_SECONDS`).
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
SILENCE_PERCENTILE = 25
QUIET_SHARE = 0.3  # without that much silence, the quietest 30% of windows are the noise
MAX_SNR_DB = 60.0  # digital silence around the speech reads as this, not infinity
FLOOR_POWER = 1e-10  # -100 dBFS: the quietest noise power counted
AUDIBLE_DB = 6.0  # a speech window counts as heard speech this far above the noise

# Below these SNRs a check says "too noisy to check" rather than a verdict: the SNRs where the
# labelled set showed the check failing (bench/speech_checks.py; docs/benchmarks.md).
MIN_SNR_SCRIPT_DB = 5.0
MIN_SNR_SPEAKER_DB = 5.0


@dataclass(frozen=True)
class Conditions:
    snr_db: float | None  # None when the VAD heard no speech
    noise_dbfs: float  # the noise floor's power in dB below full scale
    speech_dbfs: float | None
    speech_seconds: float = 0.0  # speech heard AUDIBLE_DB above the noise (the module docstring)

    def as_dict(self) -> dict[str, float | None]:
        """Return the figures as JSON-ready values (stored on the take)."""
        return {
            "snr_db": self.snr_db,
            "noise_dbfs": self.noise_dbfs,
            "speech_dbfs": self.speech_dbfs,
            "speech_seconds": self.speech_seconds,
        }


def window_powers(samples: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return the mean power of each whole 32 ms window of `samples`."""
    count = len(samples) // WINDOW
    frames = np.asarray(samples[: count * WINDOW], dtype=np.float64).reshape(count, WINDOW)
    return np.asarray(np.mean(np.square(frames), axis=1), dtype=np.float64)


def _db(power: float) -> float:
    return round(10 * float(np.log10(max(power, FLOOR_POWER))), 1)


@dataclass(frozen=True)
class Windows:
    """A take's 32 ms windows: their powers, which are speech and which the room's noise."""

    powers: npt.NDArray[np.float64]
    speech: npt.NDArray[np.bool_]
    noise: npt.NDArray[np.bool_]
    silence_found: bool  # False: no silence, the quietest windows stand in for it


def noise_windows(samples: npt.NDArray[np.float64], regions: Sequence[tuple[float, float]]) -> Windows:
    """Return the windows of 16 kHz `samples` whose speech is in `regions` (seconds), with the
    room's noise marked by the rule in the module docstring."""
    powers = window_powers(np.asarray(samples, dtype=np.float64))
    centres = (np.arange(len(powers)) + 0.5) * WINDOW / SAMPLE_RATE
    speech = np.zeros(len(powers), dtype=bool)
    near = np.zeros(len(powers), dtype=bool)
    for start, end in regions:
        speech |= (centres >= start) & (centres <= end)
        near |= (centres >= start - EDGE_SECONDS) & (centres <= end + EDGE_SECONDS)
    if np.count_nonzero(~near) * WINDOW / SAMPLE_RATE >= MIN_NOISE_SECONDS:
        return Windows(powers, speech, ~near, silence_found=True)
    quiet = np.argsort(powers, kind="stable")[: max(1, round(len(powers) * QUIET_SHARE))]
    noise = np.zeros(len(powers), dtype=bool)
    noise[quiet] = True
    return Windows(powers, speech, noise, silence_found=False)


def noise_sample(
    samples: npt.NDArray[np.float64], regions: Sequence[tuple[float, float]]
) -> npt.NDArray[np.float64]:
    """Return the take's noise windows (`noise_windows`) end to end: what its room sounds like."""
    windows = noise_windows(samples, regions)
    count = len(windows.powers)
    framed = np.asarray(samples, dtype=np.float64)[: count * WINDOW].reshape(count, WINDOW)
    return np.asarray(framed[windows.noise].reshape(-1), dtype=np.float64)


def recording_conditions(
    samples: npt.NDArray[np.float64], regions: Sequence[tuple[float, float]]
) -> Conditions:
    """Return the SNR and noise floor of 16 kHz `samples` whose speech is in `regions` (seconds)."""
    windows = noise_windows(samples, regions)
    if not windows.powers.size:
        return Conditions(None, _db(0.0), None)
    room = windows.powers[windows.noise]
    # A low percentile of the silence (a cough in it is not the room); without silence, the quietest
    # windows' mean (a percentile of them would be the deepest dip of all).
    quiet = np.percentile(room, SILENCE_PERCENTILE) if windows.silence_found else np.mean(room)
    noise = max(float(quiet), FLOOR_POWER)
    if not windows.speech.any():
        return Conditions(None, _db(noise), None)
    loud = float(np.mean(windows.powers[windows.speech]))
    snr = 10 * float(np.log10(max(loud - noise, FLOOR_POWER) / noise))
    heard = np.count_nonzero(windows.speech & (windows.powers > noise * 10 ** (AUDIBLE_DB / 10)))
    return Conditions(
        round(min(snr, MAX_SNR_DB), 1), _db(noise), _db(loud), round(heard * WINDOW / SAMPLE_RATE, 2)
    )
