"""How good does a recording sound? DNSMOS P.808 and P.835, and PLCMOS (speechmos, ONNX models).

`dnsmos_scores` is the one entry point for a mean opinion score estimate of any speech audio
(takes here, systems' response audio in evaluation): 16 kHz mono floats in [-1, 1].

The padding rule, the same for every caller: DNSMOS's models read 9.01 s windows, so a clip
shorter than 9.01 s is tiled (repeated end to end) to exactly one window, as Microsoft's
reference script tiles it; never padded with silence, which the models score as bad background.
(The reference tiles past the window and reads the repeats again a second apart: one window
holds the whole clip already, and the second read cost a 7.9 s take another 0.3 CPU seconds.)
Scores of clips shorter than MIN_SECONDS are not reported (a tiled 0.3 s clip is a buzz). A
longer clip is read in windows side by side (the last one ending at the clip's end), not a
second apart: the reference's overlapping windows read each second nine times, which cost
0.6 x real time on one core for a minute (bench/speech_models.py) for the same mean. A clip
that needs more than MAX_WINDOWS windows side by side (over about 28 s) is read in MAX_WINDOWS
spread evenly from its start to its end: each window costs about 0.2 CPU seconds whatever it
holds, and on a minute of eSpeak speech (clean, at 20 and 5 dB SNR, noisy in its second half
only) the mean of 3 spread windows was within 0.11 of all 7 side by side for P.808 and each
P.835 score. P.808 and P.835 read the same windows.
PLCMOS reads the clip as it is (tiling would add the very discontinuities it listens for).
Measured here (issue 26): P.808 falls steadily with noise, babble, clipping, low-pass, packet
loss and reverb; clean eSpeak speech 3.56, real studio recordings 3.70 on average.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from annotation.audio.speech.paths import DNSMOS_MODEL_ENV, P808_MODEL_ENV, model_path, package_dir
from annotation.audio.speech.threads import one_thread, one_thread_session

SAMPLE_RATE = 16_000
WINDOW_SECONDS = 9.01
MIN_SECONDS = 1.0
MAX_WINDOWS = 3


@dataclass(frozen=True)
class Dnsmos:
    p808: float  # overall quality as P.808 listeners rate it (1-5)
    signal: float  # P.835 SIG: the speech itself
    background: float  # P.835 BAK: the background noise (5 = none heard)
    overall: float  # P.835 OVRL


def tiled(samples: npt.NDArray[np.float64], seconds: float = WINDOW_SECONDS) -> npt.NDArray[np.float64]:
    """Return `samples` repeated end to end to exactly `seconds` when shorter (the padding rule)."""
    needed = round(seconds * SAMPLE_RATE)
    if len(samples) == 0 or len(samples) >= needed:
        return samples
    return np.tile(samples, -(-needed // len(samples)))[:needed]


class _Models:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dnsmos: Any = None
        self._plcmos: Any = None

    def dnsmos(self) -> Any:
        with self._lock:
            if self._dnsmos is None:
                from speechmos.dnsmos import DNSMOS

                class OneThreadDnsmos(DNSMOS):
                    """speechmos's DNSMOS (its features and score mapping) on one-thread sessions."""

                    def __init__(self, primary_model: Path, p808_model: Path) -> None:
                        self.primary_model_path = str(primary_model)
                        self.onnx_sess = one_thread_session(primary_model)
                        self.p808_onnx_sess = one_thread_session(p808_model)

                folder = package_dir("speechmos") / "dnsmos_models"
                self._dnsmos = OneThreadDnsmos(
                    model_path(DNSMOS_MODEL_ENV, folder / "sig_bak_ovr.onnx"),
                    model_path(P808_MODEL_ENV, folder / "model_v8.onnx"),
                )
            return self._dnsmos

    def plcmos(self) -> Any:
        with self._lock:
            if self._plcmos is None:
                from speechmos.plcmos import PLCMOS

                plcmos = PLCMOS()
                plcmos.session = one_thread_session(Path(plcmos.model_path))  # its own is one per core
                self._plcmos = plcmos
            return self._plcmos


_MODELS = _Models()


def _checked(samples: npt.ArrayLike) -> npt.NDArray[np.float64]:
    array = np.clip(np.asarray(samples, dtype=np.float64), -1.0, 1.0)
    if array.ndim != 1:
        raise ValueError("expected mono samples")
    return array


def dnsmos_scores(samples: npt.ArrayLike) -> Dnsmos | None:
    """Return DNSMOS P.808 and P.835 of 16 kHz mono `samples`; None for a clip under MIN_SECONDS."""
    array = _checked(samples)
    if len(array) < MIN_SECONDS * SAMPLE_RATE:
        return None
    model = _MODELS.dnsmos()
    with one_thread():
        scores = [model(window.astype(np.float32), SAMPLE_RATE, False) for window in windows(tiled(array))]
    return Dnsmos(
        p808=round(float(np.mean([score["p808_mos"] for score in scores])), 3),
        signal=round(float(np.mean([score["sig_mos"] for score in scores])), 3),
        background=round(float(np.mean([score["bak_mos"] for score in scores])), 3),
        overall=round(float(np.mean([score["ovrl_mos"] for score in scores])), 3),
    )


def windows(samples: npt.NDArray[np.float64]) -> list[npt.NDArray[np.float64]]:
    """Return the WINDOW_SECONDS windows DNSMOS reads: side by side, the last ending at the end;
    at most MAX_WINDOWS of them, spread evenly over a clip that would need more."""
    size = round(WINDOW_SECONDS * SAMPLE_RATE)
    starts = list(range(0, len(samples) - size + 1, size))
    if starts[-1] + size < len(samples) - MIN_SECONDS * SAMPLE_RATE:
        starts.append(len(samples) - size)
    if len(starts) > MAX_WINDOWS:
        starts = [round(start) for start in np.linspace(0, len(samples) - size, MAX_WINDOWS)]
    return [samples[start : start + size] for start in starts]


def plcmos_score(samples: npt.ArrayLike) -> float | None:
    """Return PLCMOS (v2) of 16 kHz mono `samples`: how audible dropouts and their concealment are."""
    array = _checked(samples)
    if len(array) < MIN_SECONDS * SAMPLE_RATE:
        return None
    model = _MODELS.plcmos()
    with one_thread():
        return round(float(model(array.astype(np.float32))["plcmos"]), 3)
