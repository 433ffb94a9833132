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
- speakers: each of six voices enrolled from three clean takes, tested on its other takes and
  on every other voice, in each room;
- vocal events: a laugh, breath, sigh, cough and sob (`rooms.vocal_event`, three seeds each) after
  the last word or before the first, then 2.5 s of the room: does trim advice cut one?

Figures: precision, recall and "too noisy to check" rates per flag, delivery and room; the trim
advice's cuts into events; and the real-time factor of the whole take check on a 10 s take.
Features are cached in var/bench/speech_checks.json (`--reuse` reads them back).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
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
    AlignedWord,
    Alignment,
    ScriptLimits,
    align,
    check_script,
)
from annotation.audio.speech.conditions import (
    MIN_SNR_SPEAKER_DB,
    noise_sample,
    recording_conditions,
    window_powers,
)
from annotation.audio.speech.events import trim_advice, vocal_events
from annotation.audio.speech.speaker import (
    CALIBRATION_MARGIN,
    CLEAN_SNR_DB,
    DOUBTFUL_SIMILARITY,
    MARGIN_PER_DB,
    MAX_THRESHOLD,
    MIN_THRESHOLD,
    doubtful_below,
    references_in_room,
    similarity_to,
    speaker_embedding,
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
)
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
TRIM_ROOMS = ("clean", "fan 20", "babble 20", "fan 10", "babble 10", "white 10")
TRIM_SEEDS = (0, 1, 2, 3, 4, 5)  # 0-2 set the event detector's limits; 3-5 are held out
SPEAKER_ROOMS = ("clean", "fan 20", "babble 10", "fan 10", "white 10", "babble 0")
EDGE_ROOM_SECONDS = 0.5


def at_16k(text: str, **options: Any) -> npt.NDArray[np.float64]:
    """Return `text` read by eSpeak NG at 16 kHz floats."""
    speech = synthesize(text, **options)
    return np.asarray(
        resample_poly(speech.samples.astype(np.float64) / 32768, RATE, speech.sample_rate), dtype=np.float64
    )


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


def script_features(quick: bool, sentences: Iterable[int]) -> list[dict[str, Any]]:
    """Return the script check's measurements of every take of the set (the slow part)."""
    rows: list[dict[str, Any]] = []
    room_list = QUICK_ROOMS if quick else ROOMS
    started = time.process_time()
    for index in sentences:
        text = SENTENCES[index]
        same_split = [i for i in range(len(SENTENCES)) if i % 2 == index % 2 and i != index]
        wrong = SENTENCES[same_split[(index // 2) % len(same_split)]]
        right_word, other_word = SWAPS[index]
        for delivery, options in DELIVERIES.items():
            speech = at_16k(text, **options)
            for room in room_list:
                take = in_room(speech, room, seed=index * 31 + len(delivery))
                activity = speech_activity(take)
                conditions = recording_conditions(take, activity.regions)
                scripts = {"right": text, "wrong sentence": wrong}
                if room in ("clean", "fan 10", "babble 10"):
                    scripts["one word"] = text.replace(right_word, other_word)
                for case, script in scripts.items():
                    alignment = align(take, script)
                    rows.append(
                        {
                            "sentence": index,
                            "split": split_of(index),
                            "delivery": delivery,
                            "room": room,
                            "case": case,
                            "snr_db": conditions.snr_db,
                            "snr_db_before": snr_before(take, activity.regions),
                            "snr_rule": SNR_RULE,
                            "failed": alignment.failed,
                            "goodness": alignment.goodness,
                            "coverage": alignment.coverage,
                            "loop_score": alignment.loop_score,
                            "speech_frames": alignment.speech_frames,
                            "vad_speech_seconds": round(
                                sum(end - start for start, end in activity.regions), 3
                            ),
                            "words": [[w.text, w.goodness, w.relative_score] for w in alignment.words],
                            "swapped": other_word if case == "one word" else None,
                        }
                    )
        print(
            f"  sentence {index + 1} of {len(SENTENCES)} measured ({time.process_time() - started:.0f} CPU s)",
            file=sys.stderr,
            flush=True,
        )
    return rows


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
    )


# The check before this pass: no speech-like line, and the SNR as `snr_before` read it.
BEFORE_LIMITS = ScriptLimits(-42.0, 0.6, -80.0, speech_like_loop_score=-1e9)


def verdict(row: dict[str, Any], limits: ScriptLimits) -> str:
    """Return the script check's verdict on a cached row under `limits`."""
    return check_script(_aligned(row), DOUBTFUL_RATIO, row["snr_db"], limits).verdict


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


# The tuning split may flag at most half the 5% goal: limits that sat at 3.9% there flagged 7.8% of
# held-out right takes at 10 dB (what the four tuning sentences did not show).
TUNING_FALSE_FLAGS = 0.025


def tune(rows: list[dict[str, Any]]) -> ScriptLimits:
    """Return the limits that catch most wrong sentences on the tuning split with at most
    TUNING_FALSE_FLAGS of right takes flagged (clean to 10 dB, every delivery), ties broken by
    fewer right takes flagged, then one-word misreadings caught, then the middle of what is still
    tied; print the sweep."""
    tuning = [row for row in rows if row["split"] == "tuning" and noise_level(row["room"]) != "0 dB"]

    def rate(case: str, limits: ScriptLimits) -> float:
        return float(np.mean([flagged(verdict(row, limits)) for row in tuning if row["case"] == case]))

    passing: list[tuple[float, float, float, ScriptLimits]] = []
    print("tuning sweep: take goodness, coverage, word goodness, speech-like loop score and take")
    print("goodness -> false flags (right), recall (wrong sentence), one-word misreadings flagged")
    for take_goodness in (-38.0, -40.0, -42.0, -45.0):
        for coverage in (0.5, 0.6, 0.7):
            for word_goodness in (-60.0, -80.0, -100.0):
                for loop_score, speech_like in (
                    (-1e9, -1e9),
                    *[(-8.0, g) for g in (-30.0, -32.0, -34.0, -36.0)],
                ):
                    limits = ScriptLimits(
                        take_goodness,
                        coverage,
                        word_goodness,
                        speech_like_loop_score=loop_score,
                        speech_like_take_goodness=speech_like,
                    )
                    false, recall = rate("right", limits), rate("wrong sentence", limits)
                    one_word = rate("one word", limits)
                    print(
                        f"  {take_goodness:6.1f} {coverage:4.1f} {word_goodness:8.3g} {loop_score:6.3g} "
                        f"{speech_like:6.3g} -> {false:.3f} {recall:.3f} {one_word:.3f}"
                    )
                    if false <= TUNING_FALSE_FLAGS:
                        passing.append((recall, false, one_word, limits))
    assert passing, f"no limits keep false flags at {TUNING_FALSE_FLAGS:.1%} on the tuning split"
    # Ties in recall go to fewer right takes flagged first: broken by one-word misreadings caught
    # first, the sweep chose word goodness -60, which flagged 6.7% of held-out right takes at 10 dB.
    top = max((recall, -false, one_word) for recall, false, one_word, _ in passing)
    tied = [entry for entry in passing if (entry[0], -entry[1], entry[2]) == top]
    recall, false, one_word, chosen = tied[len(tied) // 2]  # the tuning split cannot tell these apart
    print(
        f"  chosen (middle of {len(tied)} tied): {chosen}: recall {recall:.3f}, false flags {false:.3f}, "
        f"one word {one_word:.3f}"
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


def speaker_rows(quick: bool) -> list[dict[str, Any]]:
    """Return, for each speaker test take and each enrolled voice, what the speaker check measures:
    the similarity to the voice's references heard in the take's room and their leave-one-out
    similarities (`speaker.check_speaker`), and the similarity to the clean references' mean (the
    check before issue 39), with the take's SNR."""
    rows: list[dict[str, Any]] = []
    references = {
        voice: [in_room(at_16k(SENTENCES[i], voice=voice), "clean", 0) for i in SPEAKER_REFERENCE_SENTENCES]
        for voice in SPEAKER_VOICES
    }
    clean = {voice: [speaker_embedding(r) for r in refs] for voice, refs in references.items()}
    started = time.process_time()
    for voice in SPEAKER_VOICES:
        for index in SPEAKER_TEST_SENTENCES[:2] if quick else SPEAKER_TEST_SENTENCES:
            speech = at_16k(SENTENCES[index], voice=voice)
            for room in SPEAKER_ROOMS:
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
                            "split": "tuning" if index == SPEAKER_TEST_SENTENCES[0] else "held-out",
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
                        }
                    )
        print(
            f"  speaker {voice} measured ({time.process_time() - started:.0f} CPU s)",
            file=sys.stderr,
            flush=True,
        )
    return rows


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
    for split in ("tuning", "held-out"):
        for same in (True, False):
            for room in SPEAKER_ROOMS:
                chosen = [r for r in rows if r["split"] == split and r["same"] == same and r["room"] == room]
                if not chosen:
                    continue
                verdicts = [speaker_verdict(row, margin) for row in chosen]
                before = [speaker_verdict_before(row) for row in chosen]
                label = f"{split}: {'right voice' if same else 'other voice'}, {room}"
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
                        cut_event = any(
                            min(cut["end"], last) - max(cut["start"], first) > 0.02 for cut in advice["cuts"]
                        )
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
    cpu, wall = time.process_time(), time.perf_counter()
    check = check_take(take, script, same_actor_references=references)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(
        f"\nWhole take check on a {seconds:.1f} s take: {wall:.2f} s wall, {cpu:.2f} s CPU "
        f"(real-time factor {wall / seconds:.3f} wall, {cpu / seconds:.3f} CPU); references heard in "
        f"its room: {check['speaker_references_in_take_room']}"
    )


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 rooms, one speaker sentence: a shorter run")
    parser.add_argument(
        "--sentences", default="", help="the script part's sentences, e.g. 4-7 (default all; --quick 0-3)"
    )
    parser.add_argument("--merge", type=Path, nargs="*", default=[], help="more feature caches to read")
    parser.add_argument("--reuse", action="store_true", help="read the script features from --cache")
    parser.add_argument("--tune", action="store_true", help="sweep the limits on the tuning split")
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
        rows = script_features(args.quick, range(int(first), int(last or first) + 1))
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(rows))
    for extra in args.merge:
        rows += json.loads(extra.read_text())
    refresh_snr(rows)
    if rows:
        limits = tune(rows) if args.tune else ScriptLimits()
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
