"""Do the take checks hold in real rooms and on expressive speech? A labelled set, and each flag's rates.

    python bench/speech_checks.py [--quick] [--reuse] [--tune]

The labelled set (issue 39), built here from eSpeak NG (no wheel installed here ships recorded
speech: pocketsphinx, silero-vad, speechmos and Resemblyzer carry models only):

- scripts: SENTENCES, split in two: the even ones tune the thresholds (`--tune` prints the sweep),
  the odd ones are held out and every figure below is theirs unless it says "tuning";
- deliveries: four neutral voices and six expressive ones (whisper, fast, slow, high and low
  pitch, croaky), each reading its sentence; a take reads its own script ("right"), another
  sentence of its split ("wrong sentence"), or its script with one word changed ("one word");
- rooms: clean, and babble (five other eSpeak voices at once), fan (low-passed noise with hum)
  and white noise, mixed at 20, 10 and 0 dB SNR (`annotation.audio.rooms`), with 0.5 s of the
  room before and after the speech, as a take has;
- speakers: each of eight voices enrolled from three clean takes, tested on its other takes and
  on every other voice, in each room; with a cohort, four of the other voices (never the take's
  own, unless the "with take's" column says so) heard in the same room, the lead over them measured
  once what the room's voices share is taken out (`cohort_verdict`, `speaker.apart_cohort_score`); and
  short takes (SHORT_PHRASES, 0.6-1.2 s: "five five") in clean, babble, fan and white 10 dB, which
  set the minimum of speech heard under which the check is "too short" (`tune_short`);
- vocal events: a laugh, breath, sigh, cough and sob (`rooms.vocal_event`, three seeds each) after
  the last word or before the first, then 2.5 s of the room: does trim advice cut one?

Figures: precision, recall and "too noisy to check" rates per flag, delivery and room; the trim
advice's cuts into events; and the real-time factor of the whole take check on a 10 s take.
Features are cached in var/bench/speech_checks.json, .speakers.json and .short.json (`--reuse`
reads them back).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import numpy.typing as npt
from scipy.signal import resample_poly

from annotation.audio import rooms
from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.alignment import (
    DOUBTFUL_RATIO,
    MISMATCH_SHARE,
    WARPS,
    AlignedWord,
    Alignment,
    ScriptLimits,
    align,
    check_script,
    checked_script,
)
from annotation.audio.speech.conditions import (
    AUDIBLE_DB,
    MIN_SNR_SCRIPT_DB,
    MIN_SNR_SPEAKER_DB,
    noise_sample,
    recording_conditions,
    window_powers,
)
from annotation.audio.speech.events import trim_advice, vocal_events
from annotation.audio.speech.speaker import (
    CALIBRATION_MARGIN,
    CLEAN_SNR_DB,
    COHORT_MARGIN,
    COHORT_MARGIN_PER_DB,
    COHORT_SPEAKERS,
    COHORT_TAKES,
    COHORT_TOP,
    DOUBTFUL_SIMILARITY,
    MARGIN_PER_DB,
    MAX_THRESHOLD,
    MIN_SPEECH_SECONDS,
    MIN_THRESHOLD,
    SpeakerCheck,
    apart_cohort_score,
    cohort_margin,
    cohort_score,
    doubtful_below,
    references_in_room,
    similarity_to,
    speaker_embedding,
    too_short,
)
from annotation.audio.speech.take_check import check_take
from annotation.audio.synthesis import synthesize

RATE = 16_000
CACHE = Path(__file__).resolve().parent.parent / "var" / "bench" / "speech_checks.json"
SENTENCES = (
    "The quick brown fox jumps over the lazy dog near the river bank",
    "The office is closed today",
    "Please call Stella and ask her to bring these things with her from the store",
    "My brother lost his keys on the way home from work",
    "I never thought the weather would turn so cold before the end of summer",
    "Could you tell me where the nearest train station is",
    "We will meet again tomorrow morning at the station by the old clock tower",
    "She kept the letter in a drawer for nearly twenty years",
    # Short takes (two to four words, 1-2 s): around them the room's 0.5 s either side is half the
    # take, which in babble the free loop hears as speech (issue 39's real card names).
    "Close the window now",
    "Bring me the red cup",
    "Go back home",
    "Turn the lights off",
)
SHORT_FROM = 8  # the short sentences read each other's script as their wrong sentence
# One content word per sentence and what the "one word" take says instead.
SWAPS = (
    ("dog", "cat"),
    ("office", "garden"),
    ("store", "shop"),
    ("keys", "phone"),
    ("cold", "warm"),
    ("train", "bus"),
    ("morning", "evening"),
    ("letter", "ring"),
    ("window", "door"),
    ("cup", "box"),
    ("home", "inside"),
    ("lights", "radio"),
)
DELIVERIES: dict[str, dict[str, Any]] = {
    "neutral en-us": {"voice": "en-us"},
    "neutral en-gb": {"voice": "en-gb"},
    "neutral en-us+f3": {"voice": "en-us+f3"},
    "neutral en-us+m3": {"voice": "en-us+m3"},
    "whisper": {"voice": "en-us+whisper"},
    "fast": {"rate_wpm": 270},
    "slow": {"rate_wpm": 105},
    "high pitch": {"pitch": 95},
    "low pitch": {"pitch": 5},
    "croaky": {"voice": "en-us+croak"},
    # Made from a neutral reading (`rooms.delivered`): deliveries eSpeak NG does not offer.
    "shouted": {"effect": "shouted"},
    "child-like": {"pitch": 80, "effect": "child-like"},
    "elderly-like": {"voice": "en-us+m3", "effect": "elderly-like"},
    "crying": {"voice": "en-us+f3", "effect": "crying"},
    "angry": {"effect": "angry"},
}
ROOMS = ("clean", "babble 20", "fan 20", "babble 10", "fan 10", "white 10", "babble 0", "fan 0", "white 0")
QUICK_ROOMS = ("clean", "babble 10", "fan 10", "white 10", "babble 0", "fan 0")
# Genuinely different speakers: one voice per eSpeak NG voice definition that changes the formants,
# not only the pitch. The set before issue 39's second pass counted en-gb and en-gb+m1 (the same
# voice) as two speakers; en-us+m1, +m3 and +grandpa are the default voice with small changes
# (0.83-0.88 to en-us on one sentence, as close as en-us to itself), so they are left out.
SPEAKER_VOICES = (
    "en-us",
    "en-us+m7",
    "en-us+klatt",
    "en-us+david",
    "en-us+Andy",
    "en-us+f1",
    "en-us+f3",
    "en-us+belinda",
)
SPEAKER_REFERENCE_SENTENCES = (0, 2, 4)  # each voice's three clean accepted takes
SPEAKER_TEST_SENTENCES = (1, 3, 5)  # the first tunes the margin, the others are held out
# Short takes (issue 39, fifth pass): 1-3 words, 0.6-1.2 s of eSpeak speech, as a card reader's
# "five five". The even ones tune the minimum speech (`tune_short`), the odd ones are held out.
# Their rows' "sentence" is SHORT_BASE + their index.
SHORT_PHRASES = (
    "five five",
    "nine nine",
    "all right then",
    "see you on sunday",
    "good morning everyone",
    "thank you",
)
SHORT_BASE = 100
SHORT_ROOMS = ("clean", "babble 10", "fan 10", "white 10")
TRIM_ROOMS = ("clean", "fan 20", "babble 20", "fan 10", "babble 10", "white 10")
TRIM_SEEDS = (0, 1, 2, 3, 4, 5)  # 0-2 set the event detector's limits; 3-5 are held out
SPEAKER_ROOMS = ("clean", "fan 20", "babble 10", "fan 10", "white 10", "babble 0")
EDGE_ROOM_SECONDS = 0.5


def at_16k(text: str, **options: Any) -> npt.NDArray[np.float64]:
    """Return `text` read by eSpeak NG at 16 kHz floats (an "effect" option: `rooms.delivered`)."""
    effect = options.pop("effect", None)
    speech = synthesize(text, **options)
    samples = np.asarray(
        resample_poly(speech.samples.astype(np.float64) / 32768, RATE, speech.sample_rate), dtype=np.float64
    )
    return rooms.delivered(samples, effect) if effect else samples


def in_room(speech: npt.NDArray[np.float64], room: str, seed: int) -> npt.NDArray[np.float64]:
    """Return `speech` with EDGE_ROOM_SECONDS of room either side, mixed into `room` ("fan 10")."""
    pad = np.zeros(round(EDGE_ROOM_SECONDS * RATE))
    take = np.concatenate([pad, speech, pad])
    if room == "clean":
        return take
    kind, snr = room.split()
    return rooms.mixed(take, rooms.NOISES[kind](len(take) / RATE + 0.1, seed=seed), float(snr))


def snr_before(samples: npt.NDArray[np.float64], regions: Iterable[tuple[float, float]]) -> float | None:
    """Return the SNR as `recording_conditions` estimated it before babble was handled (the noise,
    without silence, the quietest tenth of windows): the "before" figures' gate."""
    powers = window_powers(samples)
    centres = (np.arange(len(powers)) + 0.5) * 512 / RATE
    speech = np.zeros(len(powers), dtype=bool)
    near = np.zeros(len(powers), dtype=bool)
    for start, end in regions:
        speech |= (centres >= start) & (centres <= end)
        near |= (centres >= start - 0.1) & (centres <= end + 0.1)
    outside = powers[~near]
    if len(outside) * 512 / RATE >= 0.3:
        noise = float(np.median(outside))
    else:
        noise = float(np.mean(np.sort(powers)[: max(1, len(powers) // 10)]))
    noise = max(noise, 1e-10)
    if not speech.any():
        return None
    loud = float(np.mean(powers[speech]))
    return round(min(10 * float(np.log10(max(loud - noise, 1e-10) / noise)), 60.0), 1)


SNR_RULE = "p25 of the silence, quietest 30% without"  # rows measured under another rule are refreshed


def refresh_snr(rows: list[dict[str, Any]]) -> None:
    """Measure again, under today's `recording_conditions`, the SNR of rows cached under another
    rule (the take is made again: eSpeak NG and the noises are deterministic, but for the whisper's
    noise source)."""
    measured: dict[tuple[int, str, str], float | None] = {}
    for row in rows:
        if row.get("snr_rule") == SNR_RULE:
            continue
        key = (row["sentence"], row["delivery"], row["room"])
        if key not in measured:
            speech = at_16k(SENTENCES[row["sentence"]], **DELIVERIES[row["delivery"]])
            take = in_room(speech, row["room"], seed=row["sentence"] * 31 + len(row["delivery"]))
            measured[key] = recording_conditions(take, speech_activity(take).regions).snr_db
        row["snr_db"], row["snr_rule"] = measured[key], SNR_RULE


def split_of(index: int) -> str:
    """Return "tuning" for the even sentences, "held-out" for the odd."""
    return "tuning" if index % 2 == 0 else "held-out"


def script_features(
    quick: bool, sentences: Iterable[int], deliveries: Iterable[str] = tuple(DELIVERIES)
) -> list[dict[str, Any]]:
    """Return the script check's measurements of every take of the set (the slow part)."""
    rows: list[dict[str, Any]] = []
    room_list = QUICK_ROOMS if quick else ROOMS
    started = time.process_time()
    for index in sentences:
        text = SENTENCES[index]
        group = range(SHORT_FROM, len(SENTENCES)) if index >= SHORT_FROM else range(SHORT_FROM)
        same_split = [i for i in group if i % 2 == index % 2 and i != index]
        wrong = SENTENCES[same_split[(index // 2) % len(same_split)]]
        right_word, other_word = SWAPS[index]
        for delivery in deliveries:
            speech = at_16k(text, **DELIVERIES[delivery])
            for room in room_list:
                take = in_room(speech, room, seed=index * 31 + len(delivery))
                activity = speech_activity(take)
                conditions = recording_conditions(take, activity.regions)
                scripts = {"right": text, "wrong sentence": wrong}
                if room in ("clean", "fan 10", "babble 10"):
                    scripts["one word"] = text.replace(right_word, other_word)
                for case, script in scripts.items():
                    row = {
                        "sentence": index,
                        "split": split_of(index),
                        "delivery": delivery,
                        "room": room,
                        "case": case,
                        "snr_db": conditions.snr_db,
                        "snr_db_before": snr_before(take, activity.regions),
                        "snr_rule": SNR_RULE,
                        "vad_speech_seconds": round(sum(end - start for start, end in activity.regions), 3),
                        "swapped": other_word if case == "one word" else None,
                        **script_features_of(take, script, conditions.snr_db),
                    }
                    rows.append(row)
        print(
            f"  sentence {index + 1} of {len(SENTENCES)} measured ({time.process_time() - started:.0f} CPU s)",
            file=sys.stderr,
            flush=True,
        )
    return rows


# The word-order contrast's lines the sweep tries (issue 39, eighth pass; -inf: off).
ORDER_CONTRASTS = (-math.inf, 0.0, 0.5, 1.0, 2.0, 3.0)
# Stricter limits than any the tuning sweep tries (with and without the speech-like line, which
# changes which line a take is held to): a take these or the shipped limits flag is aligned again
# under each warp (as `checked_script` does with the limits it is given), so every limit in the
# sweep can be read from the cache.
STRICTEST = (
    ScriptLimits(
        -30.0,
        0.75,
        -60.0,
        speech_like_loop_score=-1.0,
        speech_like_take_goodness=-24.0,
        min_heard_coverage=0.9,
        worst_word_goodness=-90.0,
        min_order_contrast=ORDER_CONTRASTS[-1],
    ),
    ScriptLimits(
        -30.0,
        0.75,
        -60.0,
        speech_like_loop_score=-1e9,
        min_heard_coverage=0.9,
        worst_word_goodness=-90.0,
        min_order_contrast=ORDER_CONTRASTS[-1],
    ),
)


def script_features_of(take: npt.NDArray[np.float64], script: str, snr_db: float | None) -> dict[str, Any]:
    """Return what the script check reads of `take` against `script` (a cache row's features),
    with the warped alignments `checked_script` would try when a take is flagged. Below the SNR
    the check needs, the take reads "too noisy" under every limit the sweep tries: it is not aligned."""
    if snr_db is not None and snr_db < MIN_SNR_SCRIPT_DB:
        return {
            "snr_db": snr_db,
            "speech_frames": 0,
            "words": [],
            "failed": False,
            "goodness": None,
            "coverage": None,
            "heard_coverage": None,
            "loop_score": None,
            "retried": False,
            "unaligned": True,
        }
    alignment = align(take, script)
    row: dict[str, Any] = {"snr_db": snr_db, "speech_frames": alignment.speech_frames, **_features(alignment)}
    if any(flagged(verdict(row, limits)) for limits in (ScriptLimits(), *STRICTEST)):
        row["warped"] = [_features(align(take, script, warp=warp)) for warp in WARPS]
    return row


def _features(alignment: Alignment) -> dict[str, Any]:
    return {
        "words": [[w.text, w.goodness, w.relative_score] for w in alignment.words],
        "failed": alignment.failed,
        "goodness": alignment.goodness,
        "coverage": alignment.coverage,
        "heard_coverage": alignment.heard_coverage,
        "loop_score": alignment.loop_score,
        "retried": alignment.retried,
        "order_contrast": alignment.order_contrast,
    }


def _aligned(row: dict[str, Any]) -> Alignment:
    """Return a cached row as the `Alignment` `check_script` reads."""
    return Alignment(
        words=tuple(
            AlignedWord(text, 0.0, 0.0, 0.0, (), relative_score=relative, goodness=goodness)
            for text, goodness, relative in row["words"]
        ),
        unknown_words=(),
        failed=row["failed"],
        goodness=row["goodness"],
        coverage=row["coverage"],
        loop_score=row.get("loop_score"),
        heard_coverage=row.get("heard_coverage"),
        order_contrast=row.get("order_contrast"),
    )


# The check before this pass: no speech-like line, and the SNR as `snr_before` read it.
BEFORE_LIMITS = ScriptLimits(-42.0, 0.6, -80.0, speech_like_loop_score=-1e9)


RANK = {"matches": 2, "doubtful": 1, "does_not_match": 0}


def verdict(row: dict[str, Any], limits: ScriptLimits) -> str:
    """Return the script check's verdict on a cached row under `limits`, as `checked_script` reads
    it: a flagged take's warped alignments (cached where the shipped limits flagged it) may lift it."""
    best = check_script(_aligned(row), DOUBTFUL_RATIO, row["snr_db"], limits).verdict
    for warped in row.get("warped", []) if flagged(best) else []:
        again = check_script(_aligned({**row, **warped}), DOUBTFUL_RATIO, row["snr_db"], limits).verdict
        best = again if RANK.get(again, 0) > RANK.get(best, 0) else best
    return best


def verdict_third_pass(row: dict[str, Any]) -> str:
    """Return the verdict of issue 39's third-pass check on the same alignments: coverage of all
    the loop hears in every room, no vocal-tract warp (the wide-beam retry is in the alignment)."""
    return check_script(_aligned({**row, "heard_coverage": None}), DOUBTFUL_RATIO, row["snr_db"]).verdict


def verdict_before(row: dict[str, Any]) -> str:
    """Return the verdict of the check before this pass (`BEFORE_LIMITS`, `snr_before`)."""
    return check_script(_aligned(row), DOUBTFUL_RATIO, row["snr_db_before"], BEFORE_LIMITS).verdict


def flagged(verdict_name: str) -> bool:
    """Return whether a verdict is a script flag (a mismatch: not "matches", not "too noisy")."""
    return verdict_name in ("doubtful", "does_not_match")


def noise_level(room: str) -> str:
    """Return "clean", "20 dB", "10 dB" or "0 dB"."""
    return "clean" if room == "clean" else f"{room.split()[1]} dB"


def rate_line(label: str, rows: list[dict[str, Any]], limits: ScriptLimits) -> str:
    """Return a table line: flagged, too noisy and "matches" rates under `limits`, and the same
    under the check before this pass."""
    total = max(len(rows), 1)
    line = f"{label:44} {len(rows):4d}"
    for verdicts in ([verdict(row, limits) for row in rows], [verdict_before(row) for row in rows]):
        flags = sum(flagged(v) for v in verdicts)
        noisy = sum(v == "too_noisy" for v in verdicts)
        matches = sum(v == "matches" for v in verdicts)
        line += f" {flags / total:8.3f} {noisy / total:10.3f} {matches / total:9.3f} |"
    return line


# The tuning split may flag at most about half the 5% goal: limits that sat at 3.9% there flagged
# 7.8% of held-out right takes at 10 dB (what the four tuning sentences did not show). Half (2.5%)
# is out of reach (issue 39, seventh pass, noise removal on and the front end rebuilt per take: the
# fewest right takes any swept limits flag is 19 of 540, 3.5%, child-like and elderly-like
# readings), so the line is that and two takes more, 21 of 540.
TUNING_FALSE_FLAGS = 0.04


def tune(rows: list[dict[str, Any]], real_rows: Sequence[dict[str, Any]] = ()) -> ScriptLimits:
    """Return the limits that catch most wrong sentences on the tuning split with at most
    TUNING_FALSE_FLAGS of right takes flagged (clean to 10 dB, every delivery), ties broken by
    fewer right takes flagged, then one-word misreadings caught, then the middle of what is still
    tied; print the sweep.

    `real_rows` (issue 39, eighth pass): real recordings' rows (`bench/real_speech.py`, its tuning
    speakers, clean and 10 dB) tune the limits too: right takes there may be flagged no more than
    TUNING_FALSE_FLAGS either, and recall counts their wrong sentences with the synthetic ones. The
    sweep is around the seventh pass's limits (its full grid is in the seventh pass's record), with
    the word-order contrast's lines (ORDER_CONTRASTS) added."""
    tuning = [row for row in rows if row["split"] == "tuning" and noise_level(row["room"]) != "0 dB"]
    real = [row for row in real_rows if noise_level(row["room"]) != "0 dB"]

    def flags(chosen: list[dict[str, Any]], case: str, limits: ScriptLimits) -> tuple[int, int]:
        cased = [row for row in chosen if row["case"] == case]
        return sum(flagged(verdict(row, limits)) for row in cased), len(cased)

    def rate(case: str, limits: ScriptLimits) -> float:
        caught, total = flags(tuning, case, limits)
        return caught / max(total, 1)

    passing: list[tuple[float, float, float, ScriptLimits]] = []
    print(
        "tuning sweep: take goodness, coverage, worst word, heard coverage, speech-like loop score and take"
    )
    print(
        "goodness, order contrast -> false flags (right), recall (wrong sentence), one-word misreadings "
        "flagged; real tuning speakers: false flags, recall; pooled recall"
    )
    for take_goodness in (-42.0, -45.0, -48.0):
        for coverage in (0.6, 0.7, 0.75):
            for worst_word, heard in itertools.product((-math.inf,), (0.75, 0.8, 0.85, 0.9)):
                for loop_score, speech_like in (
                    (-1e9, -1e9),
                    *[(loop, g) for loop in (-2.0, -3.5, -5.0) for g in (-36.0, -38.0, -40.0)],
                ):
                    for contrast in ORDER_CONTRASTS:
                        limits = ScriptLimits(
                            take_goodness,
                            coverage,
                            -80.0,
                            speech_like_loop_score=loop_score,
                            speech_like_take_goodness=speech_like,
                            min_heard_coverage=heard,
                            worst_word_goodness=worst_word,
                            min_order_contrast=contrast,
                        )
                        false, recall = rate("right", limits), rate("wrong sentence", limits)
                        one_word = rate("one word", limits)
                        real_false, real_right = flags(real, "right", limits)
                        real_caught, real_wrong = flags(real, "wrong sentence", limits)
                        caught, wrong = flags(tuning, "wrong sentence", limits)
                        pooled = (caught + real_caught) / max(wrong + real_wrong, 1)
                        real_false_rate = real_false / max(real_right, 1)
                        print(
                            f"  {take_goodness:6.1f} {coverage:4.1f} {worst_word:8.3g} {heard:4.2f} "
                            f"{loop_score:6.3g} {speech_like:6.3g} {contrast:5.3g} -> {false:.3f} {recall:.3f} "
                            f"{one_word:.3f}; real {real_false_rate:.3f} "
                            f"{real_caught / max(real_wrong, 1):.3f}; pooled {pooled:.3f}"
                        )
                        if false <= TUNING_FALSE_FLAGS and real_false_rate <= TUNING_FALSE_FLAGS:
                            passing.append((pooled, max(false, real_false_rate), one_word, limits))
    assert passing, f"no limits keep false flags at {TUNING_FALSE_FLAGS:.1%} on the tuning split"
    # Ties in recall go to fewer right takes flagged first: broken by one-word misreadings caught
    # first, the sweep chose word goodness -60, which flagged 6.7% of held-out right takes at 10 dB.
    top = max((recall, -false, one_word) for recall, false, one_word, _ in passing)
    tied = [entry for entry in passing if (entry[0], -entry[1], entry[2]) == top]
    recall, false, one_word, chosen = tied[len(tied) // 2]  # the tuning split cannot tell these apart
    print(
        f"  chosen (middle of {len(tied)} tied): {chosen}: pooled recall {recall:.3f}, false flags at most "
        f"{false:.3f}, one word {one_word:.3f}"
    )
    return chosen


def print_script(rows: list[dict[str, Any]], limits: ScriptLimits, split: str = "held-out") -> None:
    held = [row for row in rows if row["split"] == split]
    print(f"\nScript check on the {split} split, limits {limits}; before: {BEFORE_LIMITS}, its SNR")
    print(f"{'':49} {'now':^30} | {'before':^30}")
    print(f"{'take / room':44} {'n':>4}" + f" {'flagged':>8} {'too noisy':>10} {'matches':>9} |" * 2)
    for case in ("right", "wrong sentence", "one word"):
        for level in ("clean", "20 dB", "10 dB", "0 dB"):
            chosen = [row for row in held if row["case"] == case and noise_level(row["room"]) == level]
            if chosen:
                print(rate_line(f"{case}, {level}", chosen, limits))
        for room in ROOMS[1:]:
            chosen = [row for row in held if row["case"] == case and row["room"] == room]
            if chosen:
                print(rate_line(f"  {case}, {room}", chosen, limits))
    print("by delivery, clean and 10 dB (right: false flags; wrong sentence: recall)")
    for delivery in DELIVERIES:
        for case in ("right", "wrong sentence"):
            chosen = [
                row
                for row in held
                if row["case"] == case
                and row["delivery"] == delivery
                and noise_level(row["room"]) in ("clean", "10 dB")
            ]
            print(rate_line(f"{delivery}: {case}", chosen, limits))
    wrong_matches_0 = [
        row
        for row in held
        if row["case"] == "wrong sentence"
        and noise_level(row["room"]) == "0 dB"
        and verdict(row, limits) == "matches"
    ]
    flags_total = [
        row for row in held if flagged(verdict(row, limits)) and noise_level(row["room"]) != "0 dB"
    ]
    true_flags = [row for row in flags_total if row["case"] != "right"]
    print(
        f"precision of the script flag (clean to 10 dB): {len(true_flags) / max(len(flags_total), 1):.3f} "
        f"({len(true_flags)} of {len(flags_total)}); wrong sentences 'matching' at 0 dB: "
        f"{len(wrong_matches_0)} (before: "
        f"{sum(verdict_before(row) == 'matches' for row in held if row['case'] == 'wrong sentence' and noise_level(row['room']) == '0 dB')})"
    )
    named = [
        row
        for row in held
        if row["case"] == "one word"
        and row["swapped"]
        in check_script(
            _aligned(row),
            DOUBTFUL_RATIO,
            row["snr_db"],
            limits,
        ).doubtful_words
    ]
    one_word = [row for row in held if row["case"] == "one word"]
    print(f"one-word misreadings naming the changed word: {len(named)} of {len(one_word)}")
    snr_error: dict[str, list[float]] = defaultdict(list)
    for row in held:
        if row["room"] != "clean" and row["case"] == "right" and row["snr_db"] is not None:
            snr_error[row["room"]].append(row["snr_db"] - float(row["room"].split()[1]))
    print(
        "SNR estimate minus mixed SNR (median): "
        + ", ".join(f"{room} {np.median(errors):+.1f} dB" for room, errors in snr_error.items())
    )


def speaker_text(index: int) -> str:
    """Return the words of speaker test take `index` (a sentence, or SHORT_BASE + a short phrase)."""
    return SHORT_PHRASES[index - SHORT_BASE] if index >= SHORT_BASE else SENTENCES[index]


def speaker_split(index: int) -> str:
    """Return the split of speaker test take `index` (`SPEAKER_TEST_SENTENCES`, `SHORT_PHRASES`)."""
    if index >= SHORT_BASE:
        return split_of(index - SHORT_BASE)
    return "tuning" if index == SPEAKER_TEST_SENTENCES[0] else "held-out"


def speaker_rows(quick: bool, short: bool = False) -> list[dict[str, Any]]:
    """Return, for each speaker test take and each enrolled voice, what the speaker check measures:
    the similarity to the voice's references heard in the take's room and their leave-one-out
    similarities (`speaker.check_speaker`), and the similarity to the clean references' mean (the
    check before issue 39), with the take's SNR and speech heard. `short`: the SHORT_PHRASES takes."""
    rows: list[dict[str, Any]] = []
    references = {
        voice: [in_room(at_16k(SENTENCES[i], voice=voice), "clean", 0) for i in SPEAKER_REFERENCE_SENTENCES]
        for voice in SPEAKER_VOICES
    }
    clean = {voice: [speaker_embedding(r) for r in refs] for voice, refs in references.items()}
    started = time.process_time()
    if short:
        indices = [SHORT_BASE + i for i in range(len(SHORT_PHRASES))]
    else:
        indices = list(SPEAKER_TEST_SENTENCES[:2] if quick else SPEAKER_TEST_SENTENCES)
    for voice in SPEAKER_VOICES:
        for index in indices:
            speech = at_16k(speaker_text(index), voice=voice)
            for room in SHORT_ROOMS if short else SPEAKER_ROOMS:
                take = in_room(speech, room, seed=index + 7)
                regions = speech_activity(take).regions
                conditions = recording_conditions(take, regions)
                embedding = speaker_embedding(take)
                noise = noise_sample(take, regions)
                for reference in SPEAKER_VOICES:
                    heard, in_take_room = references_in_room(references[reference], noise, conditions.snr_db)
                    rows.append(
                        {
                            "voice": voice,
                            "reference": reference,
                            "sentence": index,
                            "split": speaker_split(index),
                            "room": room,
                            "same": reference == voice,
                            "similarity": similarity_to(embedding, heard),
                            "leave_one_out": [
                                similarity_to(e, [o for j, o in enumerate(heard) if j != i])
                                for i, e in enumerate(heard)
                            ],
                            "in_take_room": in_take_room,
                            "clean_similarity": similarity_to(embedding, clean[reference]),
                            "snr_db": conditions.snr_db,
                            "speech_seconds": conditions.speech_seconds,
                            "speech_db": AUDIBLE_DB,
                            # Kept for the cohort's rules (`cohort_verdict`): scored offline.
                            "embedding": [round(value, 4) for value in embedding],
                            "heard": [[round(value, 4) for value in e] for e in heard],
                        }
                    )
        print(
            f"  speaker {voice} measured ({time.process_time() - started:.0f} CPU s)",
            file=sys.stderr,
            flush=True,
        )
    return rows


def refresh_speech_seconds(rows: list[dict[str, Any]]) -> None:
    """Give rows cached before the speech heard was measured (`Conditions.speech_seconds`), or under
    another AUDIBLE_DB, theirs: the take is made again (eSpeak NG and the noises are deterministic)."""
    measured: dict[tuple[str, int, str], float] = {}
    for row in rows:
        if row.get("speech_db") == AUDIBLE_DB:
            continue
        key = (row["voice"], row["sentence"], row["room"])
        if key not in measured:
            take = in_room(
                at_16k(speaker_text(row["sentence"]), voice=row["voice"]), row["room"], row["sentence"] + 7
            )
            measured[key] = recording_conditions(take, speech_activity(take).regions).speech_seconds
        row["speech_seconds"], row["speech_db"] = measured[key], AUDIBLE_DB


def speaker_verdict(row: dict[str, Any], margin: float = CALIBRATION_MARGIN) -> str:
    """Return "flag", "ok" or "too_noisy" for a speaker row: the take against its references heard
    in its room, on the line the references' own spread sets (`speaker.calibrated_threshold`'s rule)."""
    snr = row["snr_db"]
    if snr is not None and snr < MIN_SNR_SPEAKER_DB:
        return "too_noisy"
    line = float(np.clip(min(row["leave_one_out"]) - margin, MIN_THRESHOLD, MAX_THRESHOLD))
    return "flag" if row["similarity"] < line else "ok"


def speaker_verdict_before(row: dict[str, Any]) -> str:
    """Return the verdict of the check before issue 39: clean references, the default line lowered
    MARGIN_PER_DB per dB of noise."""
    snr = row["snr_db"]
    if snr is not None and snr < MIN_SNR_SPEAKER_DB:
        return "too_noisy"
    return "flag" if row["clean_similarity"] < doubtful_below(DOUBTFUL_SIMILARITY, snr) else "ok"


def wilson(successes: int, total: int) -> str:
    """Return "rate [low-high]": the Wilson score 95% interval."""
    if total == 0:
        return "n/a"
    z = 1.96
    rate = successes / total
    centre = (rate + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(rate * (1 - rate) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return f"{rate:.3f} [{max(0.0, centre - half):.2f}-{min(1.0, centre + half):.2f}]"


def add_voices(rows: list[dict[str, Any]]) -> None:
    """Give each speaker row "voices": its take's similarity to every voice of the set heard in
    its room through COHORT_TAKES of that voice's references (what a cohort voice scored before
    the sixth pass), "voices_by_takes": the same through 2 and 3 references, and "apart": the
    shipped cohort score (`speaker.apart_cohort_score`) for each `apart_key` of `tune_cohort`'s
    sweep (2 or 3 references per cohort voice, the top 1-3 voices, with the take's own voice or not)."""
    by_take: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_take[(row["voice"], row["sentence"], row["room"])].append(row)
    for group in by_take.values():
        embedding = group[0]["embedding"]
        heard = {row["reference"]: row["heard"] for row in group}
        by_takes = {
            takes: {
                voice: similarity_to(embedding, references[:takes]) for voice, references in heard.items()
            }
            for takes in (2, 3)
        }
        for row in group:
            row["voices"] = by_takes[COHORT_TAKES]
            row["voices_by_takes"] = by_takes
            row["apart"] = {
                apart_key(takes, top, with_take): apart_cohort_score(
                    embedding,
                    row["heard"],
                    [heard[voice][:takes] for voice in cohort_of(row, with_take)],
                    top,
                )
                for takes in (2, 3)
                for top in (1, 2, 3)
                for with_take in (False, True)
            }


def apart_key(takes: int, top: int, with_take: bool) -> str:
    """Return the key of a row's "apart" score for a cohort of `takes` references per voice."""
    return f"{takes} {top} {'with take' if with_take else 'without'}"


def cohort_of(row: dict[str, Any], with_take: bool = False) -> list[str]:
    """Return a row's cohort: up to COHORT_SPEAKERS of the set's other voices, in turn after the
    enrolled one; never the enrolled voice, nor the take's own (an unknown voice; `with_take`:
    its own voice may be among them, as when another actor of the project records). A right
    voice's cohort leaves one voice out in turn (by sentence), so both cases have as many."""
    start = SPEAKER_VOICES.index(row["reference"])
    rotation = [
        SPEAKER_VOICES[(start + step) % len(SPEAKER_VOICES)] for step in range(1, len(SPEAKER_VOICES))
    ]
    left_out = (
        rotation[row["sentence"] % len(rotation)] if row["same"] else None if with_take else row["voice"]
    )
    return [voice for voice in rotation if voice != left_out][:COHORT_SPEAKERS]


def cohort_verdict(
    row: dict[str, Any],
    margin: float = COHORT_MARGIN,
    per_db: float = COHORT_MARGIN_PER_DB,
    top: int = COHORT_TOP,
    with_take: bool = False,
    minimum: float = 0.0,
    takes: int = COHORT_TAKES,
    per_short_second: float = 0.0,
    apart: bool = True,
) -> str:
    """Return "flag", "ok", "too_noisy" or "too_short" (under `minimum` seconds of speech heard)
    for a speaker row with a cohort (`add_voices`): the shipped rule
    (`speaker.SpeakerCheck.doubtful`), the actor's own line or the cohort score (`apart`: with
    what the room's voices share taken out, as shipped; else the fifth pass's plain lead)."""
    snr = row["snr_db"]
    if snr is not None and snr < MIN_SNR_SPEAKER_DB:
        return "too_noisy"
    if too_short(row.get("speech_seconds"), minimum):
        return "too_short"
    line = float(np.clip(min(row["leave_one_out"]) - CALIBRATION_MARGIN, MIN_THRESHOLD, MAX_THRESHOLD))
    line = short_line(line, row.get("speech_seconds"), per_short_second)
    voices = row["voices_by_takes"][takes] if takes != COHORT_TAKES else row["voices"]
    cohort = [voices[voice] for voice in cohort_of(row, with_take)]
    if apart:
        score = row["apart"][apart_key(takes, top, with_take)]
    else:
        score = cohort_score(row["similarity"], cohort, top)
    check = SpeakerCheck(
        row["similarity"], line, True, True, score, cohort_margin(snr, margin, per_db), len(cohort)
    )
    return "flag" if check.doubtful else "ok"


def tune_cohort(
    rows: list[dict[str, Any]], minimum: float = 0.0, sweep_takes: tuple[int, ...] = (COHORT_TAKES,)
) -> tuple[float, float, int, int]:
    """Return the cohort's (margin, per dB, top, takes) that flags most other voices (worst room,
    clean to 10 dB, then the rooms' mean) with at most 5% of the right voice flagged in every such
    room, on the tuning split (takes under `minimum` seconds of speech heard are too short: never
    flagged); ties go to the fewer references, the fewer voices averaged, the smaller slope, then
    the middle of the tied margins. Print the sweep."""
    tuning = [row for row in rows if row["split"] == "tuning" and noise_level(row["room"]) != "0 dB"]
    rooms_seen = sorted({row["room"] for row in tuning})

    def rate(same: bool, room: str, margin: float, per_db: float, top: int, takes: int) -> float:
        chosen = [row for row in tuning if row["same"] == same and row["room"] == room]
        return float(
            np.mean(
                [
                    cohort_verdict(row, margin, per_db, top, minimum=minimum, takes=takes) == "flag"
                    for row in chosen
                ]
            )
        )

    print(
        "cohort tuning sweep: takes, top, per dB -> (worst-room recall, mean recall), margins that reach it"
    )
    best: tuple[tuple[float, float], float, float, int, int] | None = None
    for takes in sweep_takes:
        for top in (1, 2, 3):
            for per_db in (0.0, 0.002, 0.004, 0.006):
                reached = []
                for margin in np.arange(-0.05, 0.301, 0.01):
                    if max(rate(True, room, margin, per_db, top, takes) for room in rooms_seen) <= 0.05:
                        recalls = [rate(False, room, margin, per_db, top, takes) for room in rooms_seen]
                        reached.append(
                            ((round(min(recalls), 3), round(float(np.mean(recalls)), 3)), float(margin))
                        )
                if not reached:
                    continue
                score = max(value for value, _ in reached)
                tied = [margin for value, margin in reached if value == score]
                middle = round((min(tied) + max(tied)) / 2, 3)
                print(
                    f"  takes {takes}, top {top}, {per_db:.3f}/dB -> {score}, "
                    f"margins {min(tied):.2f}-{max(tied):.2f}"
                )
                if best is None or score > best[0]:
                    best = (score, middle, per_db, top, takes)
    if best is None:
        print("cohort tuning: no margin keeps the right voice's flags at 5%")
        return COHORT_MARGIN, COHORT_MARGIN_PER_DB, COHORT_TOP, COHORT_TAKES
    print(
        f"  chosen: margin {best[1]:.3f} less {best[2]:.3f}/dB, top {best[3]}, {best[4]} references "
        f"(tuning: {best[0]})"
    )
    return best[1], best[2], best[3], best[4]


def tune_speaker(rows: list[dict[str, Any]]) -> float:
    """Return the calibration margin that flags most other voices (worst room, clean to 10 dB) with
    at most 5% of the right voice flagged in every such room, on the tuning split; print the sweep."""
    tuning = [row for row in rows if row["split"] == "tuning" and noise_level(row["room"]) != "0 dB"]
    rooms_seen = sorted({row["room"] for row in tuning})

    def rate(same: bool, room: str, margin: float) -> float:
        chosen = [row for row in tuning if row["same"] == same and row["room"] == room]
        return float(np.mean([speaker_verdict(row, margin) == "flag" for row in chosen]))

    best: tuple[float, float] | None = None
    print("speaker tuning sweep: margin -> worst-room false flags (right voice), worst-room recall")
    for margin in np.arange(0.0, 0.121, 0.01):
        false = max(rate(True, room, margin) for room in rooms_seen)
        recall = min(rate(False, room, margin) for room in rooms_seen)
        print(f"  {margin:.2f} -> {false:.3f} {recall:.3f}")
        if false <= 0.05 and (best is None or recall > best[0]):
            best = (recall, float(margin))
    if best is None:
        print("speaker tuning: no margin keeps the right voice's flags at 5%")
        return CALIBRATION_MARGIN
    print(f"  chosen: margin {best[1]:.2f} (worst-room recall {best[0]:.3f} on the tuning split)")
    return best[1]


# Tried in the fifth pass, not shipped: the own line lowered per second of speech heard under
# SHORT_SECONDS (`tune_short`); held out it flagged 2 of 24 short right-voice takes in babble 10.
SHORT_SECONDS = 1.5


def short_line(line: float, speech_seconds: float | None, per_second: float) -> float:
    """Return the own `line` lowered `per_second` for each second of speech under SHORT_SECONDS."""
    if speech_seconds is None:
        return line
    return line - per_second * max(0.0, SHORT_SECONDS - speech_seconds)


SHORT_STEPS = tuple(round(0.1 * step, 1) for step in range(0, 21))


def tune_short(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """Return the (minimum speech heard, own line lowered per second under SHORT_SECONDS) that
    leaves the fewest tuning takes too short with at most 5% of the right voice flagged in every
    room (clean to 10 dB), on the tuning split's short and sentence takes together under the shipped
    cohort rule; ties go to the smaller lowering. Print the sweep."""
    tuning = [row for row in rows if row["split"] == "tuning" and noise_level(row["room"]) != "0 dB"]
    rooms_seen = sorted({row["room"] for row in tuning})
    print(
        "too-short tuning sweep: minimum s, line lowered per s -> worst-room right flagged, "
        "mean other caught, too short"
    )
    reached: list[tuple[float, float, float]] = []
    for per_second in (0.0, 0.05, 0.1, 0.2, 0.3):
        for minimum in SHORT_STEPS:
            verdicts = [
                (row, cohort_verdict(row, minimum=minimum, per_short_second=per_second)) for row in tuning
            ]
            false = [
                float(np.mean([v == "flag" for row, v in verdicts if row["same"] and row["room"] == room]))
                for room in rooms_seen
            ]
            caught = [
                float(
                    np.mean([v == "flag" for row, v in verdicts if not row["same"] and row["room"] == room])
                )
                for room in rooms_seen
            ]
            short = float(np.mean([v == "too_short" for _, v in verdicts]))
            if minimum in (0.0, 0.5, 0.7, 0.8, 0.9, 1.0, 1.2) or max(false) <= 0.05:
                print(
                    f"  {minimum:.1f} s, {per_second:.2f}/s -> {max(false):.3f} {np.mean(caught):.3f} {short:.3f}"
                )
            if max(false) <= 0.05:
                reached.append((short, per_second, minimum))
                break  # the least minimum for this lowering
    if not reached:
        print("too-short tuning: no minimum keeps the right voice's flags at 5%")
        return MIN_SPEECH_SECONDS, 0.0
    _, per_second, minimum = min(reached)
    print(
        f"  chosen: {minimum:.1f} s of speech heard, the line {per_second:.2f} lower per second under 1.5 s"
    )
    return minimum, per_second


def print_short(rows: list[dict[str, Any]], minimum: float, per_second: float) -> None:
    print(
        f"\nSpeaker flag with a cohort and a minimum of {minimum:.1f} s of speech heard ({AUDIBLE_NOTE}), "
        f"the own line {per_second:.2f} lower per second under 1.5 s; "
        f"short takes: {', '.join(SHORT_PHRASES)} (even tune, odd held out)"
    )
    print(
        f"{'takes / split / voice / room':48} {'n':>4} {'speech s':>8} {'too short [CI]':>20} "
        f"{'flagged, all [CI]':>20} {'flagged, checked [CI]':>22} {'no minimum [CI]':>20}"
    )
    for short in (True, False):
        for split in ("tuning", "held-out"):
            for same in (True, False):
                for room in SPEAKER_ROOMS:
                    chosen = [
                        r
                        for r in rows
                        if (r["sentence"] >= SHORT_BASE) == short
                        and r["split"] == split
                        and r["same"] == same
                        and r["room"] == room
                    ]
                    if not chosen or noise_level(room) == "0 dB":
                        continue
                    verdicts = [
                        cohort_verdict(row, minimum=minimum, per_short_second=per_second) for row in chosen
                    ]
                    checked = [v for v in verdicts if v in ("flag", "ok")]
                    before = sum(cohort_verdict(row) == "flag" for row in chosen)
                    label = (
                        f"{'short' if short else 'sentences'} {split}: {'right' if same else 'other'}, {room}"
                    )
                    print(
                        f"{label:48} {len(chosen):4d} "
                        f"{np.median([r['speech_seconds'] for r in chosen]):8.2f} "
                        f"{wilson(verdicts.count('too_short'), len(chosen)):>20} "
                        f"{wilson(verdicts.count('flag'), len(chosen)):>20} "
                        f"{wilson(checked.count('flag'), len(checked)):>22} {wilson(before, len(chosen)):>20}"
                    )


AUDIBLE_NOTE = f"VAD speech windows {AUDIBLE_DB:.0f} dB above the noise"


def print_cohort_choices(
    rows: list[dict[str, Any]], minimum: float, chosen: tuple[float, float, int, int]
) -> None:
    """Print the held-out other voices caught and right voices flagged per room (sentences and
    short takes, `minimum` seconds of speech), under the shipped cohort rule and `chosen`."""
    shipped = (COHORT_MARGIN, COHORT_MARGIN_PER_DB, COHORT_TOP, COHORT_TAKES)
    print(f"\nHeld out, cohort rule (margin, per dB, top, references): shipped {shipped}, chosen {chosen}")
    for room in SPEAKER_ROOMS:
        if noise_level(room) == "0 dB":
            continue
        cells = []
        for rule in (shipped, chosen):
            for same in (True, False):
                group = [
                    r for r in rows if r["split"] == "held-out" and r["room"] == room and r["same"] == same
                ]
                flags = sum(
                    cohort_verdict(r, rule[0], rule[1], rule[2], minimum=minimum, takes=rule[3]) == "flag"
                    for r in group
                )
                cells.append(f"{'right' if same else 'other'} {wilson(flags, len(group))}")
        print(f"  {room:10} shipped: {cells[0]}, {cells[1]}; chosen: {cells[2]}, {cells[3]}")


# The fifth pass's cohort rule (the plain lead over the closest cohort voice), for the "before" column.
FIFTH_PASS_COHORT_MARGIN = 0.085
FIFTH_PASS_COHORT_MARGIN_PER_DB = 0.004


def print_cohort(rows: list[dict[str, Any]], margin: float, per_db: float, top: int) -> None:
    print(
        f"\nSpeaker flag with a cohort: {COHORT_SPEAKERS} other voices ({COHORT_TAKES} references each) "
        f"heard in the take's room; doubtful under the own line or when its lead over the top {top} "
        f"cohort voice, with what the room's voices share taken out, is under {margin:.3f} less "
        f"{per_db:.3f} per dB under {CLEAN_SNR_DB} dB. Cohort never the enrolled voice, nor the take's "
        'own ("with take\'s": it may be). Before: the plain lead, under '
        f"{FIFTH_PASS_COHORT_MARGIN} less {FIFTH_PASS_COHORT_MARGIN_PER_DB}/dB (fifth pass)."
    )
    print(
        f"{'split / voice / room':40} {'n':>4} {'own line only [CI]':>20} {'with cohort [CI]':>20} "
        f"{'with take in cohort':>20} {'before [CI]':>20}"
    )
    for label, chosen in speaker_groups(rows):
        own = sum(speaker_verdict(row) == "flag" for row in chosen)
        cohort = sum(cohort_verdict(row, margin, per_db, top) == "flag" for row in chosen)
        with_take = sum(cohort_verdict(row, margin, per_db, top, with_take=True) == "flag" for row in chosen)
        before = sum(
            cohort_verdict(row, FIFTH_PASS_COHORT_MARGIN, FIFTH_PASS_COHORT_MARGIN_PER_DB, 1, apart=False)
            == "flag"
            for row in chosen
        )
        print(
            f"{label:40} {len(chosen):4d} {wilson(own, len(chosen)):>20} "
            f"{wilson(cohort, len(chosen)):>20} {wilson(with_take, len(chosen)):>20} "
            f"{wilson(before, len(chosen)):>20}"
        )


def speaker_groups(rows: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Yield each (split, right or other voice, room) group of speaker rows that has any, labelled."""
    for split in ("tuning", "held-out"):
        for same in (True, False):
            for room in SPEAKER_ROOMS:
                chosen = [r for r in rows if r["split"] == split and r["same"] == same and r["room"] == room]
                if chosen:
                    yield f"{split}: {'right voice' if same else 'other voice'}, {room}", chosen


def print_speaker(rows: list[dict[str, Any]], margin: float) -> None:
    print(
        f"\nSpeaker flag: references heard in the take's room, line = their lowest leave-one-out "
        f"similarity - {margin:.2f} (within {MIN_THRESHOLD}-{MAX_THRESHOLD}); too noisy below "
        f"{MIN_SNR_SPEAKER_DB} dB. Before: clean references, {DOUBTFUL_SIMILARITY} lowered "
        f"{MARGIN_PER_DB} per dB under {CLEAN_SNR_DB} dB. {len(SPEAKER_VOICES)} voices: {', '.join(SPEAKER_VOICES)}"
    )
    print(
        f"{'split / voice / room':44} {'n':>4} {'flagged':>8} {'too noisy':>10} {'mean sim':>9} "
        f"{'before: flagged':>16} {'clean sim':>10}"
    )
    for label, chosen in speaker_groups(rows):
        verdicts = [speaker_verdict(row, margin) for row in chosen]
        before = [speaker_verdict_before(row) for row in chosen]
        print(
            f"{label:44} {len(chosen):4d} {verdicts.count('flag') / len(chosen):8.3f} "
            f"{verdicts.count('too_noisy') / len(chosen):10.3f} "
            f"{np.mean([row['similarity'] for row in chosen]):9.3f} "
            f"{before.count('flag') / len(chosen):16.3f} "
            f"{np.mean([row['clean_similarity'] for row in chosen]):10.3f}"
        )


def audible_span(event: npt.NDArray[np.float64], noise_power: float) -> tuple[int, int] | None:
    """Return the first and last 10 ms frame of `event` louder than `noise_power` (or, in a clean
    room, within 30 dB of its loudest frame); None when no frame is."""
    frames = len(event) // 160
    power = np.mean(np.square(event[: frames * 160].reshape(frames, 160)), axis=1)
    floor = noise_power if noise_power > 0 else power.max() * 1e-3
    loud = np.flatnonzero(power >= floor)
    return (int(loud[0]), int(loud[-1])) if loud.size else None


@dataclass(frozen=True)
class RoomTrim:
    span: tuple[int, int] | None  # the event's audible frames over the room's noise; None if masked
    advice: dict[str, Any]  # trim_advice's answer on the take in the room
    events: tuple[Any, ...]  # the vocal events found
    cut_event: bool  # a cut overlaps the audible event by more than 20 ms


def trim_in_room(
    take: npt.NDArray[np.float64], event: npt.NDArray[np.float64], event_start: int, room: str, seed: int
) -> RoomTrim:
    """Mix the take into `room` ("clean" or "<noise> <snr dB>") and return the trim advice on it, and
    whether a cut falls on the audible part of the event that starts at sample `event_start`."""
    noise_power = 0.0
    mixed = take
    if room != "clean":
        noisy_kind, snr = room.split()
        noise = rooms.NOISES[noisy_kind](len(take) / RATE + 0.1, seed=seed)
        mixed = rooms.mixed(take, noise, float(snr))
        noise_power = float(np.mean(np.square(mixed - take)))
    span = audible_span(event, noise_power)
    activity = speech_activity(mixed)
    conditions = recording_conditions(mixed, activity.regions)
    events = vocal_events(mixed, activity.regions, conditions.noise_dbfs)
    advice = trim_advice(activity.duration, activity.regions, events, 1.5)
    cut_event = False
    if span is not None:
        first = (event_start + span[0] * 160) / RATE
        last = (event_start + (span[1] + 1) * 160) / RATE
        cut_event = any(min(c["end"], last) - max(c["start"], first) > 0.02 for c in advice["cuts"])
    return RoomTrim(span, advice, events, cut_event)


def trim_rows(quick: bool) -> list[dict[str, Any]]:
    """Return, for each take with a vocal event at an edge, whether trim advice cut into it."""
    rows: list[dict[str, Any]] = []
    room_list = TRIM_ROOMS
    for kind in rooms.EVENT_KINDS:
        for seed in TRIM_SEEDS if not quick else (0, 3):
            text = SENTENCES[(seed * 2 + 1) % len(SENTENCES)]
            speech = at_16k(text, voice=SPEAKER_VOICES[seed % len(SPEAKER_VOICES)])
            event = rooms.at_level(rooms.vocal_event(kind, seed), speech, rooms.EVENT_LEVEL_DB[kind])
            for where in ("end", "start"):
                gap = np.zeros(round(0.25 * RATE))
                room_before = np.zeros(round((2.5 if where == "start" else 0.4) * RATE))
                room_after = np.zeros(round((2.5 if where == "end" else 0.4) * RATE))
                parts = (
                    [room_before, speech, gap, event, room_after]
                    if where == "end"
                    else [room_before, event, gap, speech, room_after]
                )
                take = np.concatenate(parts)
                event_start = sum(len(part) for part in parts[: 3 if where == "end" else 1])
                for room in room_list:
                    trimmed = trim_in_room(take, event, event_start, room, seed)
                    span, advice, events = trimmed.span, trimmed.advice, trimmed.events
                    cut_event = trimmed.cut_event
                    rows.append(
                        {
                            "kind": kind,
                            "split": "tuning" if seed < 3 else "held-out",
                            "room": room,
                            "where": where,
                            "audible": span is not None,
                            "cut_event": cut_event,
                            "advised": bool(advice["cuts"]),
                            "found": bool(events),
                        }
                    )
    return rows


def print_trim(rows: list[dict[str, Any]]) -> None:
    print("\nTrim advice beside a vocal event (2.5 s of room after the last or before the first sound)")
    print(
        f"{'split / event or room':36} {'n':>3} {'audible':>8} {'cut into':>9} {'trim advised':>13} "
        f"{'event found':>12}"
    )
    for split in ("tuning", "held-out"):
        for key in [*rooms.EVENT_KINDS, *TRIM_ROOMS]:
            chosen = [row for row in rows if row["split"] == split and key in (row["kind"], row["room"])]
            print(
                f"{split + ': ' + key:36} {len(chosen):3d} {sum(r['audible'] for r in chosen):8d} "
                f"{sum(r['cut_event'] for r in chosen):9d} {sum(r['advised'] for r in chosen):13d} "
                f"{sum(r['found'] for r in chosen):12d}"
            )
        audible = [row for row in rows if row["audible"] and row["split"] == split]
        print(
            f"{split}: audible vocal events cut by trim advice: {sum(r['cut_event'] for r in audible)} "
            f"of {len(audible)}"
        )


def print_speed() -> None:
    """Print the whole take check's real-time factor on a 10 s take in a fan's noise, its voice
    compared with three accepted takes heard in its room (models loaded first)."""
    speech = np.concatenate([at_16k(SENTENCES[i]) for i in (0, 2, 6)] + [np.zeros(round(0.8 * RATE))])
    take = in_room(speech, "fan 20", seed=3)
    script = " ".join(SENTENCES[i] for i in (0, 2, 6))
    check_take(take[: RATE * 2], SENTENCES[0])  # load the models
    seconds = len(take) / RATE
    references = [in_room(at_16k(SENTENCES[i]), "clean", 0) for i in (1, 3, 5)]
    cohort = [
        [in_room(at_16k(SENTENCES[i], voice=voice), "clean", 0) for i in (1, 3)][:COHORT_TAKES]
        for voice in SPEAKER_VOICES[1 : 1 + COHORT_SPEAKERS]
    ]
    for voices, label in ((cohort, "with a cohort"), ((), "without a cohort")):
        cpu, wall = time.process_time(), time.perf_counter()
        check = check_take(take, script, same_actor_references=references, cohort_references=voices)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(
            f"\nWhole take check on a {seconds:.1f} s take, {label} ({check['speaker_cohort_size']} "
            f"voices): {wall:.2f} s wall, {cpu:.2f} s CPU (real-time factor {wall / seconds:.3f} wall, "
            f"{cpu / seconds:.3f} CPU); references heard in its room: "
            f"{check['speaker_references_in_take_room']}"
        )
    # The script check's worst case: a flagged take pays the wide-beam retry and each warp.
    for label, text in (
        ("its script", script),
        ("another script (flagged)", " ".join(SENTENCES[i] for i in (1, 3, 5))),
    ):
        cpu = time.process_time()
        _, script_check = checked_script(take, text, snr_db=20.0)
        cpu = time.process_time() - cpu
        print(
            f"script check alone against {label}: {script_check.verdict}, {cpu:.2f} s CPU "
            f"(real-time factor {cpu / seconds:.3f} CPU)"
        )


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 rooms, one speaker sentence: a shorter run")
    parser.add_argument(
        "--sentences", default="", help="the script part's sentences, e.g. 4-7 (default all; --quick 0-3)"
    )
    parser.add_argument("--deliveries", default="", help="comma-separated deliveries (default all)")
    parser.add_argument("--merge", type=Path, nargs="*", default=[], help="more feature caches to read")
    parser.add_argument("--reuse", action="store_true", help="read the script features from --cache")
    parser.add_argument("--tune", action="store_true", help="sweep the limits on the tuning split")
    parser.add_argument(
        "--real-tuning",
        type=Path,
        nargs="*",
        default=[],
        help="bench/real_speech.py script caches whose tuning speakers' rows tune the limits too",
    )
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the script features are kept")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: script,speaker,trim,speed")
    args = parser.parse_args(list(argv) if argv is not None else None)
    cache: Path = args.cache
    skip = set(args.skip.split(","))
    if "script" in skip:
        rows = []
    elif args.reuse and cache.exists():
        rows = json.loads(cache.read_text())
    else:
        first, _, last = (args.sentences or ("0-3" if args.quick else f"0-{len(SENTENCES) - 1}")).partition(
            "-"
        )
        deliveries = args.deliveries.split(",") if args.deliveries else tuple(DELIVERIES)
        rows = script_features(args.quick, range(int(first), int(last or first) + 1), deliveries)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(rows))
    for extra in args.merge:
        rows += json.loads(extra.read_text())
    refresh_snr(rows)
    if rows:
        from bench.real_speech import held_out  # it reads this module's features: imported here

        real_rows = [
            row
            for path in args.real_tuning
            for row in json.loads(path.read_text())
            if not held_out(row["speaker"])
        ]
        limits = tune(rows, real_rows) if args.tune else ScriptLimits()
        print_script(rows, limits, "tuning")
        print_script(rows, limits)
    if "speaker" not in skip:
        speaker_cache = cache.with_suffix(".speakers.json")
        if args.reuse and speaker_cache.exists():
            speakers = json.loads(speaker_cache.read_text())
        else:
            speakers = speaker_rows(args.quick)
            cache.parent.mkdir(parents=True, exist_ok=True)
            speaker_cache.write_text(json.dumps(speakers))
        margin = tune_speaker(speakers) if args.tune else CALIBRATION_MARGIN
        print_speaker(speakers, margin)
        add_voices(speakers)
        cohort = tune_cohort(speakers)[:3] if args.tune else (COHORT_MARGIN, COHORT_MARGIN_PER_DB, COHORT_TOP)
        print_cohort(speakers, *cohort)
        if args.tune:  # issue 39, fifth pass: 3 references per cohort voice too, sentences only
            print_cohort_choices(speakers, 0.0, tune_cohort(speakers, sweep_takes=(2, 3)))
        short_cache = cache.with_suffix(".short.json")
        if args.reuse and short_cache.exists():
            shorts = json.loads(short_cache.read_text())
        else:
            shorts = speaker_rows(args.quick, short=True)
            short_cache.write_text(json.dumps(shorts))
        for rows_of, path in ((speakers, speaker_cache), (shorts, short_cache)):
            if any(row.get("speech_db") != AUDIBLE_DB for row in rows_of):
                refresh_speech_seconds(rows_of)
                path.write_text(json.dumps(rows_of))
        add_voices(shorts)
        both = speakers + shorts
        print_short(both, MIN_SPEECH_SECONDS, 0.0)  # as shipped
        if args.tune:
            print_short(both, *tune_short(both))
        if args.tune:  # issue 39, fifth pass: more references or voices, on short takes too
            print_cohort_choices(
                both, MIN_SPEECH_SECONDS, tune_cohort(both, MIN_SPEECH_SECONDS, sweep_takes=(2, 3))
            )
    if "trim" not in skip:
        print_trim(trim_rows(args.quick))
    if "speed" not in skip:
        print_speed()
    print(
        f"(a doubtful word also needs {DOUBTFUL_RATIO}x the take's median word; "
        f"over {MISMATCH_SHARE:.0%} doubtful words is a mismatch)"
    )


if __name__ == "__main__":
    main()
