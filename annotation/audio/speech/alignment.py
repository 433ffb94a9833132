"""Does a take say its script, and when is each word and phone? Forced alignment with pocketsphinx.

pocketsphinx's en-us acoustic model and CMU dictionary ship in its wheel. Two passes: the first
aligns the script's words, the second their phones (`set_alignment`). Measured on eSpeak NG
speech (issue 26): word starts within a median 6-10 ms, phones per second within about 3%.

Why the preparation: digital silence breaks the acoustic model's feature normalisation, so a
take is padded with 0.3 s and given faint noise (about 32 dB below its speech) before aligning;
alignment failures on the right script fell from 21/120 to 0/120.

Why an absolute score against a free phone loop (issue 39): scoring each word against the take's
own median word let a take reading another sentence "match" (every word equally wrong, nothing
stood out). Now the same audio is also decoded by a free phone loop (pocketsphinx's allphone
search: any phone after any other, the wheel's phone bigram), which scores what the audio
supports on its own; the script's forced-alignment score minus the loop's over the same frames is
a goodness of pronunciation (GOP) in pocketsphinx's log units per 10 ms frame: a little below 0
when the take says the script, far below when it does not, whatever the voice or the room. Per take, the
deficit over every frame (silences included: speech the script cannot place falls into them) is
divided by the frames the loop hears speech in (`Alignment.goodness`), and the script's words must
cover enough of that speech (`Alignment.coverage`: a short script inside a long take of something
else covers little). A take whose script finds no path at all does not match. Per word, a word is
doubtful when it scores below WORD_GOODNESS against the loop and DOUBTFUL_RATIO times worse than
the take's median word (the ratio only names which word, never clears a take). The limits were
set on the labelled set's tuning split and measured on its held-out split (bench/speech_checks.py,
docs/benchmarks.md); below the SNR the check holds at (`conditions.MIN_SNR_SCRIPT_DB`) the verdict
is "too_noisy". Free ASR is never a gate (its word error rate on synthetic speech is 0.77-0.93).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from annotation.audio.acoustics import WORD
from annotation.audio.speech.conditions import MIN_SNR_SCRIPT_DB
from annotation.audio.speech.paths import (
    ACOUSTIC_MODEL_ENV,
    DICTIONARY_ENV,
    PHONE_LM_ENV,
    model_path,
    package_dir,
)

SAMPLE_RATE = 16_000
FRAME_SECONDS = 0.01  # pocketsphinx's frame rate is 100 per second
PAD_SECONDS = 0.3
NOISE_BELOW_SPEECH_DB = 32.0
# A word scoring this many times worse per frame than the take's median word is doubtful; on
# eSpeak voices a substituted word scored 3.5-6 times worse, right words at most about 2.
DOUBTFUL_RATIO = 3.0
# More than this share of doubtful words: the take reads something else.
MISMATCH_SHARE = 0.4
# The absolute check (see the module docstring): a take scoring below TAKE_GOODNESS per speech
# frame against the free phone loop, or whose words cover less than MIN_COVERAGE of the speech the
# loop hears, does not say its script; a word is doubtful below WORD_GOODNESS and DOUBTFUL_RATIO.
# Function words are spoken in weak forms ("her" as "er", "to" as "tuh"), more so the faster or
# more expressive the delivery, and the dictionary has their strong forms: on the labelled set they
# were nearly every doubtful word in right takes (issue 39). They are never named doubtful; a
# take that drops them still fails the whole-take check when they are most of it.
FUNCTION_WORDS = frozenset(
    "a an the and or but so of to in on at by for from with as is are was were be been am it its "  # noqa: SIM905
    "i me my we us our you your he him his she her they them their this that these those there "
    "not no do does did has have had will would can could shall should may might must than then".split()
)
TAKE_GOODNESS = -42.0
MIN_COVERAGE = 0.6
WORD_GOODNESS = -80.0
# Speech-like noise (babble: other voices) gives a wrong script sounds to borrow: the free loop
# scores such audio poorly as well (its `Alignment.loop_score` under SPEECH_LIKE_LOOP_SCORE per
# frame; -1 to +8 in clean, fan and white rooms at 10 dB and over, -5 to -18 in babble), so the
# gap between a wrong script and the loop narrows, and wrong sentences in babble scored -32 to -41.
# There the take must score over SPEECH_LIKE_TAKE_GOODNESS instead of TAKE_GOODNESS.
SPEECH_LIKE_LOOP_SCORE = -8.0
SPEECH_LIKE_TAKE_GOODNESS = -32.0

Verdict = Literal["matches", "doubtful", "does_not_match", "unchecked", "too_noisy"]


@dataclass(frozen=True)
class ScriptLimits:
    """Where the absolute script check draws its lines (set on the labelled set's tuning split,
    bench/speech_checks.py; measured on its held-out split in docs/benchmarks.md).

    Measured held out (eSpeak NG, 10 deliveries, 40 takes per room): wrong sentences flagged
    0.975 clean, 0.975 at 20 dB, 0.950 at 10 dB (babble 1.000, fan 1.000, white 0.850: a
    five-word script inside an eleven-word take covers 0.61-0.69 of it); right takes flagged 0
    clean, 0 at 20 dB, 0.017 at 10 dB; precision 0.993 clean to 10 dB. At 0 dB 98% read
    "too_noisy" (below `min_snr_db`) and no wrong sentence "matches". A one-word misreading is
    flagged in 0.40 (clean) and 0.28 (10 dB) of takes: it still goes to review."""

    take_goodness: float = TAKE_GOODNESS
    min_coverage: float = MIN_COVERAGE
    word_goodness: float = WORD_GOODNESS
    min_snr_db: float = MIN_SNR_SCRIPT_DB
    speech_like_loop_score: float = SPEECH_LIKE_LOOP_SCORE
    speech_like_take_goodness: float = SPEECH_LIKE_TAKE_GOODNESS


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
    goodness: float = 0.0  # per-frame score minus the free phone loop's: 0 as good, lower worse


@dataclass(frozen=True)
class Alignment:
    words: tuple[AlignedWord, ...]
    unknown_words: tuple[str, ...]  # script words the dictionary lacks (not aligned)
    failed: bool  # the aligner found no path through the script at all
    # The whole take's script score against the free loop's, per frame the loop hears speech in.
    goodness: float | None = None
    # The script's words' frames over the frames the free loop hears speech in (about 1 when the
    # take says the script; a short script in a long take of something else covers little of it).
    coverage: float | None = None
    # The free loop's own acoustic score per frame it hears speech in: how well the audio fits any
    # speech at all. Noise, most of all other voices, pulls it down (a confidence signal).
    loop_score: float | None = None
    speech_frames: int = 0  # the frames the free loop hears speech in

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
    goodness: float | None = None  # the whole take's, against the free phone loop
    coverage: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the check as JSON-ready values (stored on the take)."""
        return {
            "verdict": self.verdict,
            "doubtful_words": list(self.doubtful_words),
            "weakest_word": self.weakest_word,
            "weakest_ratio": self.weakest_ratio,
            "reason": self.reason,
            "goodness": self.goodness,
            "coverage": self.coverage,
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
        self._loop: Any = None

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
            # The free phone loop the script is measured against: any phone may follow any other
            # (the wheel's phone bigram), so it scores what the audio supports on its own.
            self._loop = Decoder(
                hmm=str(model_path(ACOUSTIC_MODEL_ENV, models / "en-us")),
                allphone=str(model_path(PHONE_LM_ENV, models / "en-us-phone.lm.bin")),
                lm=None,
                bestpath=False,
                loglevel="FATAL",
            )
        return self._decoder

    def free_scores(self, pcm: bytes) -> npt.NDArray[np.float64]:
        """Return the free phone loop's acoustic score of each 10 ms frame of `pcm` (each phone's
        score spread evenly over its frames), NaN where the loop hears silence or a filler.
        Call with the lock held, after `_load`."""
        loop = self._loop
        loop.start_utt()
        loop.process_raw(pcm, full_utt=True)
        loop.end_utt()
        logmath = loop.get_logmath()
        frames = np.zeros(len(pcm) // 2 // 160 + 1)
        for segment in loop.seg():
            start, end = segment.start_frame, segment.end_frame + 1
            if end > start and segment.ascore > 0:
                frames[start:end] = logmath.log(segment.ascore) / (end - start)
                if segment.word == "SIL" or segment.word.startswith("+"):
                    frames[start:end] = np.nan
        return frames

    def align(
        self, pcm: bytes, words: list[str], free_loop: bool = True
    ) -> tuple[list[tuple[str, int, int, int, list[Any]]], list[str], npt.NDArray[np.float64]]:
        with self._lock:
            decoder = self._load()
            known = [word for word in words if decoder.lookup_word(word)]
            unknown = [word for word in words if not decoder.lookup_word(word)]
            if not known:
                return [], unknown, np.zeros(0)
            free = self.free_scores(pcm) if free_loop else np.zeros(0)
            decoder.set_align_text(" ".join(known))
            decoder.start_utt()
            decoder.process_raw(pcm, full_utt=True)
            decoder.end_utt()
            if decoder.hyp() is None:
                return [], unknown, free
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
            return aligned, unknown, free


_ALIGNER = _Aligner()


def align(samples: npt.NDArray[np.float64], script: str, *, scored: bool = True) -> Alignment:
    """Return the script's words and phones aligned to 16 kHz `samples` (floats in [-1, 1]).

    `scored=False` skips the free phone loop (the largest cost) for callers that need only where
    the words and phones are (speaking rate, stress): goodness and coverage are then None."""
    words = script_words(script)
    aligned, unknown, free = _ALIGNER.align(prepared_pcm(samples), words, free_loop=scored)
    offset = PAD_SECONDS
    kept: list[AlignedWord] = []
    free_filled = np.nan_to_num(free, nan=0.0)
    deficit, word_frames = 0.0, 0
    for name, start, duration, score, phones in aligned:
        if duration <= 0:
            continue
        # What the script costs against the free loop over the same frames (0: as good, below: worse).
        word_deficit = score - float(free_filled[start : start + duration].sum())
        deficit += word_deficit
        if name in SILENCES:
            continue
        word_frames += duration
        kept.append(
            AlignedWord(
                text=name.split("(")[0],  # "the(2)" is the dictionary's second pronunciation
                start=round(max(0.0, start * FRAME_SECONDS - offset), 3),
                end=round(max(0.0, (start + duration) * FRAME_SECONDS - offset), 3),
                score_per_frame=score / duration,
                goodness=round(word_deficit / duration, 2),
                phones=tuple(
                    Phone(p, round(s * FRAME_SECONDS - offset, 3), round((s + d) * FRAME_SECONDS - offset, 3))
                    for p, s, d in phones
                    if p not in SILENCES
                ),
            )
        )
    median = float(np.median([word.score_per_frame for word in kept])) if kept else 0.0
    if median < 0:
        kept = [replace(w, relative_score=round(w.score_per_frame / median, 2)) for w in kept]
    speech_frames = int(np.count_nonzero(~np.isnan(free)))
    loop_score = float(np.nanmean(free)) if speech_frames else None
    return Alignment(
        words=tuple(kept),
        unknown_words=tuple(unknown),
        failed=bool(words) and not aligned,
        goodness=round(deficit / max(speech_frames, 1), 2) if aligned and scored else None,
        coverage=round(word_frames / max(speech_frames, 1), 3) if aligned and scored else None,
        loop_score=round(loop_score, 2) if loop_score is not None and scored else None,
        speech_frames=speech_frames,
    )


def check_script(
    alignment: Alignment,
    doubtful_ratio: float = DOUBTFUL_RATIO,
    snr_db: float | None = None,
    limits: ScriptLimits | None = None,
) -> ScriptCheck:
    """Return whether the aligned take says its script: matches, doubtful (which words), does not
    match, or too noisy to check (`snr_db` below `limits.min_snr_db`; see the module docstring)."""
    chosen = limits or ScriptLimits()
    goodness, coverage = alignment.goodness, alignment.coverage
    if snr_db is not None and snr_db < chosen.min_snr_db:
        return ScriptCheck(
            "too_noisy",
            (),
            None,
            None,
            f"Too noisy to check the script: the speech is {snr_db:.0f} dB above the noise, "
            f"the check needs {chosen.min_snr_db:.0f} dB.",
            goodness,
            coverage,
        )
    if alignment.failed:
        return ScriptCheck(
            "does_not_match", (), None, None, "The take could not be matched to its script at all."
        )
    if not alignment.words:
        return ScriptCheck("unchecked", (), None, None, "The script has no word the aligner knows.")
    weakest = min(alignment.words, key=lambda word: word.goodness)
    doubtful = tuple(
        word.text
        for word in alignment.words
        if word.goodness < chosen.word_goodness
        and word.relative_score >= doubtful_ratio
        and word.text not in FUNCTION_WORDS
    )
    speech_like = alignment.loop_score is not None and alignment.loop_score < chosen.speech_like_loop_score
    line = chosen.speech_like_take_goodness if speech_like else chosen.take_goodness
    whole_fails = (goodness is not None and goodness < line) or (
        coverage is not None and coverage < chosen.min_coverage
    )
    if whole_fails or (len(alignment.words) > 2 and len(doubtful) / len(alignment.words) > MISMATCH_SHARE):
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
    return ScriptCheck(verdict, doubtful, weakest.text, weakest.relative_score, reason, goodness, coverage)
