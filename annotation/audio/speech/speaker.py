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

On real speech that was not enough (other voices 0.78 clean, 0.27-0.57 at 10 dB): the room heard
on both sides lifts every voice towards the take. So a take is also scored against a cohort, other
actors' voices heard in the same room (`cohort_score`, `cohort_margin`): held out, eSpeak other
voices 0.96 clean and 0.89-0.96 at 10 dB (0 of 48 right voices flagged); real speech 0.96 clean,
0.52-0.82 at 10 dB with 7.5-17.5% of right voices flagged there (docs/benchmarks.md).

The lead over the cohort was what the room left: noise heard on every side lifts every voice
alike (in babble, the room's own voices). So the lead is now measured after taking out what all the
voices heard in the room share, the mean of their unit embeddings (`shared_voice`,
`apart_cohort_score`; sixth pass): held out, eSpeak other voices 0.955 clean and 0.911-0.964 at
10 dB (0 of 48 right voices flagged); real speech, of the takes checked, 0.994 clean and
0.933-1.000 at 10 dB (0.54-0.84 before) with the right voice flagged 0-5% (docs/benchmarks.md).

From about a second of speech the embedding is unreliable: short eSpeak takes ("five five") of
the right voice scored under the cohort margin in 38-58% of the takes at 10 dB and 50% clean. So
under MIN_SPEECH_SECONDS of speech heard above the room the check is "too short to check" (its
own state, as "too noisy"), never a mismatch (`too_short`; the take check's TOO_SHORT flag).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
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
# Cohort normalisation (issue 39, fourth pass): on real speech, hearing the references in the
# take's room lifts every voice towards the take, so a take is also scored against other actors'
# voices (each one's COHORT_TAKES cleanest accepted takes, COHORT_SPEAKERS actors at most) heard
# in the same room: its similarity to its actor less its similarity to the closest of them
# (`cohort_score`). With fewer than MIN_COHORT other voices only the actor's own line decides.
# Sixth pass: the lead is measured after taking out what every voice heard in the room shares
# (`shared_voice`, `apart_cohort_score`): the room's own sound (in babble, its voices) lifts them
# all alike, and the lead over the cohort was what it left. A take is doubtful under
# COHORT_MARGIN, less COHORT_MARGIN_PER_DB per dB under CLEAN_SNR_DB, or under the actor's own
# line as before. Tuned on the labelled set's tuning split (bench/speech_checks.py --tune: the
# best worst-room recall with at most 5% of the right voice flagged in every room clean to 10 dB,
# ties to one voice, the smaller slope, then the middle of the tied margins).
COHORT_SPEAKERS = 4
COHORT_TAKES = 2
MIN_COHORT = 2
COHORT_TOP = 1
COHORT_MARGIN = 0.135
COHORT_MARGIN_PER_DB = 0.0
# Too short to check (issue 39, fifth pass): from under MIN_SPEECH_SECONDS of speech heard above
# the room (`conditions.Conditions.speech_seconds`) the embedding is unreliable (on real speech
# every right voice wrongly flagged at 10 dB was a card reader's ~1 s "five five"), so the check
# says "too short to check" with the figure instead of a verdict. Set on the labelled set's tuning
# split of short eSpeak utterances and sentences: the least minimum that flags at most 5% of the
# right voice in every room clean to 10 dB (bench/speech_checks.py --tune; docs/benchmarks.md).
MIN_SPEECH_SECONDS = 1.0


def too_short(speech_seconds: float | None, minimum: float = MIN_SPEECH_SECONDS) -> bool:
    """Return whether `speech_seconds` of heard speech are too few to check the voice on."""
    return speech_seconds is not None and speech_seconds < minimum


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


# A worker checks many takes against the same accepted takes (the actor's, the cohort's): heard
# clean, their embeddings are kept by content, the CLEAN_CACHE_SIZE latest.
CLEAN_CACHE_SIZE = 64
_clean_embeddings: OrderedDict[bytes, list[float]] = OrderedDict()
_clean_lock = threading.Lock()


def clean_embedding(samples: npt.NDArray[np.float64]) -> list[float]:
    """Return `speaker_embedding(samples)`, from the cache when these very samples were embedded."""
    key = hashlib.blake2b(np.ascontiguousarray(samples, dtype=np.float64).tobytes(), digest_size=16).digest()
    with _clean_lock:
        if key in _clean_embeddings:
            _clean_embeddings.move_to_end(key)
            return _clean_embeddings[key]
    embedding = speaker_embedding(samples)
    with _clean_lock:
        _clean_embeddings[key] = embedding
        while len(_clean_embeddings) > CLEAN_CACHE_SIZE:
            _clean_embeddings.popitem(last=False)
    return embedding


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


def cohort_score(value: float, cohort: Sequence[float], top: int = COHORT_TOP) -> float:
    """Return `value` (a take's similarity to its actor) less the mean of the `top` highest of
    `cohort` (its similarities to other voices heard in the same room): over 0, nearer its actor."""
    closest = sorted(cohort, reverse=True)[: max(1, top)]
    return round(value - float(np.mean(closest)), 4)


def cohort_margin(
    snr_db: float | None, clean: float = COHORT_MARGIN, per_db: float = COHORT_MARGIN_PER_DB
) -> float:
    """Return the lead over the closest cohort voice a take at `snr_db` needs (None: clean)."""
    return round(doubtful_below(clean, snr_db, per_db), 4)


def shared_voice(heard: Sequence[Sequence[float]]) -> npt.NDArray[np.float64]:
    """Return what the voices `heard` in one room share: the mean of their unit embeddings."""
    units = [np.asarray(e, dtype=np.float64) / max(float(np.linalg.norm(e)), 1e-12) for e in heard]
    return np.asarray(np.mean(units, axis=0), dtype=np.float64)


def apart_from(embedding: Sequence[float], shared: npt.NDArray[np.float64]) -> list[float]:
    """Return `embedding` (made unit length) less the `shared` part of the voices in its room."""
    vector = np.asarray(embedding, dtype=np.float64)
    return (vector / max(float(np.linalg.norm(vector)), 1e-12) - shared).tolist()


def apart_cohort_score(
    embedding: Sequence[float],
    references: Sequence[Sequence[float]],
    cohort: Sequence[Sequence[Sequence[float]]],
    top: int = COHORT_TOP,
) -> float:
    """Return the `cohort_score` of a take's `embedding` against its actor's `references` and the
    `cohort`'s voices (a list of embeddings each), all heard in its room, after taking out what
    they share (`shared_voice` of the references and the cohort, never the take)."""
    shared = shared_voice([*references, *(e for voice in cohort for e in voice)])
    take = apart_from(embedding, shared)
    value = similarity_to(take, [apart_from(e, shared) for e in references])
    others = [similarity_to(take, [apart_from(e, shared) for e in voice]) for voice in cohort if len(voice)]
    assert value is not None
    return cohort_score(value, [other for other in others if other is not None], top)


@dataclass(frozen=True)
class SpeakerCheck:
    similarity: float  # the take against the mean of its references (as heard in its room)
    threshold: float  # below this the take is doubtful (without a cohort)
    in_take_room: bool  # the references were mixed with the take's noise
    calibrated: bool  # the threshold is the actor's own (MIN_REFERENCES or more references)
    # With MIN_COHORT or more other voices: the take's lead over its closest cohort voice with
    # what the room's voices share taken out (`apart_cohort_score`), doubtful under cohort_margin;
    # how many voices, never whose.
    cohort_score: float | None = None
    cohort_margin: float = COHORT_MARGIN
    cohort_size: int = 0

    @property
    def doubtful(self) -> bool:
        """Return whether the voice sounds unlike the references: under the line, or (with a
        cohort) not nearer to them than to other voices heard in the same room by the margin."""
        if self.cohort_score is not None and self.cohort_score < self.cohort_margin:
            return True
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
        return [clean_embedding(reference) for reference in cut], False
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
    cohort: Sequence[Sequence[npt.NDArray[np.float64]]] = (),
) -> SpeakerCheck | None:
    """Return how a take's speaker `embedding` compares with its actor's `references` (16 kHz
    samples) heard in the take's room (see the module docstring); None without references.

    `cohort` holds other actors' references (one list of samples per actor): heard in the same
    room, they give the cohort score the verdict rests on when MIN_COHORT or more are given."""
    if not references:
        return None
    heard, in_room = references_in_room(references, noise, snr_db)
    calibrated = calibrated_threshold(heard)
    value = similarity_to(embedding, heard)
    assert value is not None
    score = None
    voices = [voice for voice in cohort if len(voice)]
    if len(voices) >= MIN_COHORT:
        others = [references_in_room(voice, noise, snr_db)[0] for voice in voices]
        score = apart_cohort_score(embedding, heard, others)
    margin = cohort_margin(snr_db)
    if calibrated is not None:
        return SpeakerCheck(value, round(calibrated, 3), in_room, True, score, margin, len(voices))
    # Too few references to know the actor's spread: the default line, lowered with noise unless
    # the references were heard in the take's room.
    threshold = default_threshold if in_room else doubtful_below(default_threshold, snr_db)
    return SpeakerCheck(value, round(threshold, 3), in_room, False, score, margin, len(voices))
