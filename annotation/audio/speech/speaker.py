"""Who is speaking? A speaker embedding per recording (Resemblyzer's GE2E encoder) and similarity.

The encoder's weights ship in the Resemblyzer wheel (it installs with --no-deps; see
requirements-speech.txt). Measured here (issue 26): the same eSpeak voice 0.848 ± 0.047, another
0.657 ± 0.093 (EER 10% at 0.78); real recordings of one speaker in different deliveries
0.67-0.95, shouting and a mixed-in background lowest. So a low similarity flags, never rejects.

Noise moves an embedding as far as another voice does (issue 39: at 10 dB white noise the right
voice fell from 0.92 to 0.71 against clean references, other voices sat at 0.56-0.62), so a take
is compared with its actor's references heard in the take's own room (`check_speaker`): the
actor's cleanest accepted takes, each mixed with the take's noise (`conditions.noise_sample`) at
the take's SNR, so both sides of the comparison are measured under the same conditions (held out,
the right voice then scores 0.91-0.93 in every room to 10 dB, as clean; against clean references
it fell to 0.73 in white noise). And the line is the actor's own: how alike those references are
to one another (each against the others' mean, the lowest, less CALIBRATION_MARGIN), so an actor
whose deliveries vary gets a lower line than a steady voice. Measured on eight eSpeak NG voices
(bench/speech_checks.py, docs/benchmarks.md), held out: no right voice flagged clean to 10 dB
(0 of 80), other voices flagged 0.91 clean and 0.87-0.94 at 10 dB (before: 0.75 and 0.27-0.52).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
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
# Heard in the take's room (`check_speaker`): the actor's REFERENCE_TAKES cleanest accepted takes,
# each cut to REFERENCE_SECONDS (the encoder's cost grows with length); the take is doubtful below
# the references' lowest leave-one-out similarity less CALIBRATION_MARGIN, kept between
# MIN_THRESHOLD and MAX_THRESHOLD (tuned on the labelled set's tuning split, measured on its
# held-out split: bench/speech_checks.py, docs/benchmarks.md). With fewer than MIN_REFERENCES the
# line is DOUBTFUL_SIMILARITY lowered with noise (`doubtful_below`). A room with less than
# MIN_NOISE_SECONDS of noise to hear is not imitated: the references are compared clean.
REFERENCE_TAKES = 3
REFERENCE_SECONDS = 8.0
MIN_REFERENCES = 3
CALIBRATION_MARGIN = 0.12
MIN_THRESHOLD = 0.6
MAX_THRESHOLD = 0.9
MIN_NOISE_SECONDS = 0.25


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


@dataclass(frozen=True)
class SpeakerCheck:
    similarity: float  # the take against the mean of its references (as heard in its room)
    threshold: float  # below this the take is doubtful
    in_take_room: bool  # the references were mixed with the take's noise
    calibrated: bool  # the threshold is the actor's own (MIN_REFERENCES or more references)

    @property
    def doubtful(self) -> bool:
        """Return whether the voice sounds unlike the references."""
        return self.similarity < self.threshold


def in_room_of(
    reference: npt.NDArray[np.float64], noise: npt.NDArray[np.float64], snr_db: float, seed: int = 0
) -> npt.NDArray[np.float64]:
    """Return `reference` with `noise` (looped from a seeded point) mixed in `snr_db` below its speech."""
    start = int(np.random.default_rng(seed).integers(0, len(noise)))
    from annotation.audio.rooms import mixed  # rooms loads scipy: the check's worker, never the web app

    return mixed(np.asarray(reference, dtype=np.float64), np.roll(noise, -start), snr_db)


def references_in_room(
    references: Sequence[npt.NDArray[np.float64]], noise: npt.NDArray[np.float64], snr_db: float | None
) -> tuple[list[list[float]], bool]:
    """Return the embeddings of 16 kHz `references` as heard in a take's room (its `noise` at its
    `snr_db`), and whether they were mixed: a clean take (None or CLEAN_SNR_DB and over) or too
    little noise to hear (under MIN_NOISE_SECONDS) compares them as they are."""
    cut = [np.asarray(reference[: round(REFERENCE_SECONDS * SAMPLE_RATE)]) for reference in references]
    if snr_db is None or snr_db >= CLEAN_SNR_DB or len(noise) < MIN_NOISE_SECONDS * SAMPLE_RATE:
        return [speaker_embedding(reference) for reference in cut], False
    return [
        speaker_embedding(in_room_of(reference, noise, snr_db, seed)) for seed, reference in enumerate(cut)
    ], True


def calibrated_threshold(
    embeddings: Sequence[Sequence[float]], margin: float = CALIBRATION_MARGIN
) -> float | None:
    """Return the actor's own line: the lowest similarity of one reference to the others' mean,
    less `margin`, within MIN_THRESHOLD-MAX_THRESHOLD (None under MIN_REFERENCES references)."""
    if len(embeddings) < MIN_REFERENCES:
        return None
    others = [
        similarity_to(embedding, [other for j, other in enumerate(embeddings) if j != i])
        for i, embedding in enumerate(embeddings)
    ]
    lowest = min(value for value in others if value is not None)
    return float(np.clip(lowest - margin, MIN_THRESHOLD, MAX_THRESHOLD))


def check_speaker(
    embedding: Sequence[float],
    references: Sequence[npt.NDArray[np.float64]],
    noise: npt.NDArray[np.float64],
    snr_db: float | None,
    default_threshold: float = DOUBTFUL_SIMILARITY,
) -> SpeakerCheck | None:
    """Return how a take's speaker `embedding` compares with its actor's `references` (16 kHz
    samples) heard in the take's room (see the module docstring); None without references."""
    if not references:
        return None
    heard, in_room = references_in_room(references, noise, snr_db)
    calibrated = calibrated_threshold(heard)
    value = similarity_to(embedding, heard)
    assert value is not None
    if calibrated is not None:
        return SpeakerCheck(value, round(calibrated, 3), in_room, True)
    # Too few references to know the actor's spread: the default line, lowered with noise unless
    # the references were heard in the take's room.
    threshold = default_threshold if in_room else doubtful_below(default_threshold, snr_db)
    return SpeakerCheck(value, round(threshold, 3), in_room, False)
