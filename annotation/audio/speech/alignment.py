"""Does a take say its script, and when is each word and phone? Forced alignment with pocketsphinx.

pocketsphinx's en-us acoustic model and CMU dictionary ship in its wheel. Two passes: the first
aligns the script's words, the second their phones (`set_alignment`). Measured on eSpeak NG
speech (issue 26): word starts within a median 6-10 ms, phones per second within about 3%.

Why the preparation: digital silence breaks the acoustic model's feature normalisation, so a
take is padded with 0.3 s and given faint noise (about 32 dB below its speech) before aligning;
alignment failures on the right script fell from 21/120 to 0/120.

Why a relative score: an absolute alignment score does not separate right and wrong scripts
across voices and rooms. Each word's acoustic score per frame is compared with the take's own
median word, so the voice and the channel cancel: a word the take does not say scores several
times worse than the rest. Free ASR is never a gate (its word error rate on synthetic speech is
0.77-0.93).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from annotation.audio.acoustics import WORD
from annotation.audio.speech.paths import ACOUSTIC_MODEL_ENV, DICTIONARY_ENV, model_path, package_dir

SAMPLE_RATE = 16_000
FRAME_SECONDS = 0.01  # pocketsphinx's frame rate is 100 per second
PAD_SECONDS = 0.3
NOISE_BELOW_SPEECH_DB = 32.0
# A word scoring this many times worse per frame than the take's median word is doubtful; on
# eSpeak voices a substituted word scored 3.5-6 times worse, right words at most about 2.
DOUBTFUL_RATIO = 3.0
# More than this share of doubtful words: the take reads something else.
MISMATCH_SHARE = 0.4

Verdict = Literal["matches", "doubtful", "does_not_match", "unchecked"]
SILENCES = frozenset({"<sil>", "<s>", "</s>", "SIL", "[NOISE]", "++NOISE++"})


@dataclass(frozen=True)
class Phone:
    name: str
    start: float
    end: float


@dataclass(frozen=True)
class AlignedWord:
    """A script word where the take says it (seconds from the take's start), and how well it fits."""

    text: str
    start: float
    end: float
    score_per_frame: float  # the acoustic log-likelihood per 10 ms frame; higher is better
    phones: tuple[Phone, ...]
    relative_score: float = 1.0  # per-frame score / the take's median word's: 1 typical, >3 doubtful


@dataclass(frozen=True)
class Alignment:
    words: tuple[AlignedWord, ...]
    unknown_words: tuple[str, ...]  # script words the dictionary lacks (not aligned)
    failed: bool  # the aligner found no path through the script at all

    @property
    def phones_per_second(self) -> float | None:
        """Return phones per second of speech: phones over the time inside words, pauses excluded."""
        speaking = sum(word.end - word.start for word in self.words)
        phones = sum(len(word.phones) for word in self.words)
        return phones / speaking if speaking > 0 and phones else None

    @property
    def speech_seconds(self) -> float:
        """Return the time inside aligned words (pauses between words excluded)."""
        return sum(word.end - word.start for word in self.words)


@dataclass(frozen=True)
class ScriptCheck:
    verdict: Verdict
    doubtful_words: tuple[str, ...]
    weakest_word: str | None
    weakest_ratio: float | None
    reason: str  # one sentence for the actor

    def as_dict(self) -> dict[str, Any]:
        """Return the check as JSON-ready values (stored on the take)."""
        return {
            "verdict": self.verdict,
            "doubtful_words": list(self.doubtful_words),
            "weakest_word": self.weakest_word,
            "weakest_ratio": self.weakest_ratio,
            "reason": self.reason,
        }


def script_words(script: str) -> list[str]:
    """Return the script's words as the dictionary spells them (lower case, apostrophes kept)."""
    return [match.group().lower().strip("'") for match in WORD.finditer(script) if match.group().strip("'")]


def prepared_pcm(samples: npt.NDArray[np.float64], seed: int = 0) -> bytes:
    """Return `samples` padded and lightly noised as 16-bit PCM bytes (see the module docstring)."""
    pad = np.zeros(round(PAD_SECONDS * SAMPLE_RATE))
    padded = np.concatenate([pad, np.asarray(samples, dtype=np.float64), pad])
    loud = np.abs(samples) > 1e-4
    speech_rms = float(np.sqrt(np.mean(np.square(samples[loud])))) if loud.any() else 1e-3
    noise = np.random.default_rng(seed).normal(
        0.0, speech_rms / 10 ** (NOISE_BELOW_SPEECH_DB / 20), len(padded)
    )
    return np.clip(np.round((padded + noise) * 32767), -32768, 32767).astype("<i2").tobytes()


class _Aligner:
    """One pocketsphinx decoder per process; loading the model takes longer than aligning a take."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._decoder: Any = None

    def _load(self) -> Any:
        if self._decoder is None:
            from pocketsphinx import Decoder

            models = package_dir("pocketsphinx") / "model" / "en-us"
            self._decoder = Decoder(
                hmm=str(model_path(ACOUSTIC_MODEL_ENV, models / "en-us")),
                dict=str(model_path(DICTIONARY_ENV, models / "cmudict-en-us.dict")),
                lm=None,
                bestpath=False,  # the second (phone) pass fails to end with the lattice pass on
                loglevel="FATAL",
            )
        return self._decoder

    def align(
        self, pcm: bytes, words: list[str]
    ) -> tuple[list[tuple[str, int, int, int, list[Any]]], list[str]]:
        with self._lock:
            decoder = self._load()
            known = [word for word in words if decoder.lookup_word(word)]
            unknown = [word for word in words if not decoder.lookup_word(word)]
            if not known:
                return [], unknown
            decoder.set_align_text(" ".join(known))
            decoder.start_utt()
            decoder.process_raw(pcm, full_utt=True)
            decoder.end_utt()
            if decoder.hyp() is None:
                return [], unknown
            decoder.set_alignment()
            decoder.start_utt()
            decoder.process_raw(pcm, full_utt=True)
            decoder.end_utt()
            aligned = [
                (
                    entry.name,
                    entry.start,
                    entry.duration,
                    entry.score,
                    [(phone.name, phone.start, phone.duration) for phone in entry],
                )
                for entry in decoder.get_alignment()
            ]
            return aligned, unknown


_ALIGNER = _Aligner()


def align(samples: npt.NDArray[np.float64], script: str) -> Alignment:
    """Return the script's words and phones aligned to 16 kHz `samples` (floats in [-1, 1])."""
    words = script_words(script)
    aligned, unknown = _ALIGNER.align(prepared_pcm(samples), words)
    offset = PAD_SECONDS
    kept: list[AlignedWord] = []
    for name, start, duration, score, phones in aligned:
        if name in SILENCES or duration <= 0:
            continue
        kept.append(
            AlignedWord(
                text=name.split("(")[0],  # "the(2)" is the dictionary's second pronunciation
                start=round(max(0.0, start * FRAME_SECONDS - offset), 3),
                end=round(max(0.0, (start + duration) * FRAME_SECONDS - offset), 3),
                score_per_frame=score / duration,
                phones=tuple(
                    Phone(p, round(s * FRAME_SECONDS - offset, 3), round((s + d) * FRAME_SECONDS - offset, 3))
                    for p, s, d in phones
                    if p not in SILENCES
                ),
            )
        )
    median = float(np.median([word.score_per_frame for word in kept])) if kept else 0.0
    if median < 0:
        kept = [
            AlignedWord(
                w.text, w.start, w.end, w.score_per_frame, w.phones, round(w.score_per_frame / median, 2)
            )
            for w in kept
        ]
    return Alignment(words=tuple(kept), unknown_words=tuple(unknown), failed=bool(words) and not aligned)


def check_script(alignment: Alignment, doubtful_ratio: float = DOUBTFUL_RATIO) -> ScriptCheck:
    """Return whether the aligned take says its script: matches, doubtful (which words), or not."""
    if alignment.failed:
        return ScriptCheck(
            "does_not_match", (), None, None, "The take could not be matched to its script at all."
        )
    if not alignment.words:
        return ScriptCheck("unchecked", (), None, None, "The script has no word the aligner knows.")
    weakest = max(alignment.words, key=lambda word: word.relative_score)
    doubtful = tuple(word.text for word in alignment.words if word.relative_score >= doubtful_ratio)
    if len(alignment.words) > 2 and len(doubtful) / len(alignment.words) > MISMATCH_SHARE:
        verdict: Verdict = "does_not_match"
        reason = "Most of the take does not sound like its script."
    elif doubtful:
        verdict = "doubtful"
        quoted = ", ".join(f"'{word}'" for word in doubtful)
        reason = (
            f"The take may not say {quoted} where the script has {'it' if len(doubtful) == 1 else 'them'}."
        )
    else:
        verdict, reason = "matches", "The take says its script."
    return ScriptCheck(verdict, doubtful, weakest.text, weakest.relative_score, reason)
