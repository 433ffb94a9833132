"""Who is speaking? A speaker embedding per recording (Resemblyzer's GE2E encoder) and similarity.

The encoder's weights ship in the Resemblyzer wheel (it installs with --no-deps; see
requirements-speech.txt). Measured here (issue 26): the same eSpeak voice 0.848 ± 0.047, another
0.657 ± 0.093 (EER 10% at 0.78); real recordings of one speaker in different deliveries
0.67-0.95, shouting and a mixed-in background lowest. So a low similarity flags, never rejects.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from annotation.audio.speech.paths import SPEAKER_MODEL_ENV, model_path, package_dir
from annotation.audio.speech.threads import one_thread

SAMPLE_RATE = 16_000
# Below this cosine similarity to the same actor's accepted takes, a take is flagged for review.
DOUBTFUL_SIMILARITY = 0.7
# Noise pulls every embedding away from the clean voice's (issue 39: 13 of 40 right-voice takes
# flagged at 10 dB white noise with the clean threshold), so the threshold drops by
# MARGIN_PER_DB for each dB of SNR below CLEAN_SNR_DB (measured on the labelled set,
# bench/speech_checks.py); below conditions.MIN_SNR_SPEAKER_DB the check is not made at all.
CLEAN_SNR_DB = 25.0
MARGIN_PER_DB = 0.008


class _Encoder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encoder: Any = None

    def embed(self, samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        with self._lock:
            if self._encoder is None:
                from resemblyzer import VoiceEncoder

                default = package_dir("resemblyzer") / "pretrained.pt"
                self._encoder = VoiceEncoder(
                    "cpu", verbose=False, weights_fpath=model_path(SPEAKER_MODEL_ENV, default)
                )
            from resemblyzer import preprocess_wav

            prepared = preprocess_wav(samples, source_sr=SAMPLE_RATE)
            if len(prepared) < SAMPLE_RATE // 2:  # the trim left almost nothing: embed what there is
                prepared = samples
            with one_thread():
                return np.asarray(self._encoder.embed_utterance(prepared), dtype=np.float32)


_ENCODER = _Encoder()


def speaker_embedding(samples: npt.ArrayLike) -> list[float]:
    """Return the 256-number unit-length speaker embedding of 16 kHz mono float `samples`."""
    return [round(float(value), 5) for value in _ENCODER.embed(np.asarray(samples, dtype=np.float32))]


def doubtful_below(threshold: float, snr_db: float | None, per_db: float = MARGIN_PER_DB) -> float:
    """Return the similarity below which a take at `snr_db` is doubtful: `threshold` for a clean
    take, `per_db` lower for each dB under CLEAN_SNR_DB (None, no speech heard: `threshold`)."""
    if snr_db is None:
        return threshold
    return threshold - per_db * max(0.0, CLEAN_SNR_DB - snr_db)


def similarity(first: Sequence[float], second: Sequence[float]) -> float:
    """Return the cosine similarity of two speaker embeddings (1 the same voice)."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return round(float(a @ b) / norms, 4) if norms > 0 else 0.0


def similarity_to(embedding: Sequence[float], others: Sequence[Sequence[float]]) -> float | None:
    """Return the similarity of `embedding` to the mean of `others` (None when there are none)."""
    if not others:
        return None
    return similarity(embedding, np.mean(np.asarray(others, dtype=np.float64), axis=0).tolist())
