"""Long audio, drawn at once (issue 46): time from navigation to the first drawn waveform, and the
bytes the browser received before it, for a 10 s, a 10-minute and a 60-minute take, in real Chromium.

    .venv/bin/python bench/long_audio.py [--runs 3] [--no-hour]

A throwaway SQLite database and media folder (a temporary ECHOSTUDIO_VAR_DIR) hold one admin and
the takes: eSpeak NG sentences repeated over low noise, 16 kHz mono WAV (19.2 MB for 10 minutes,
115 MB for an hour), with the waveform peaks the analysis job makes. The app runs under gunicorn;
each run opens the take page in a fresh browser context (empty cache). "before peaks" takes have
none, so the page downloads and decodes the whole audio first, as it did before issue 46.

Prints per take the median over the runs of: milliseconds from navigation to the first drawn
waveform, and bytes of every response received before it (audio counted by its Content-Range
span), and the load average (the machine may be shared: compare rows of one run only).
Goals: about the same time for every length, and at most 1 MB before the first draw.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VAR_DIR = Path(tempfile.mkdtemp(prefix="bench-long-audio-"))
os.environ["ECHOSTUDIO_VAR_DIR"] = str(VAR_DIR)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import django

django.setup()

import numpy as np
from django.core.management import call_command
from scipy.signal import resample_poly

from annotation.audio.peaks import waveform_peaks
from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.recording.models import Take
from bench.servers import gunicorn, load_average
from tests.annotation.labelling.support import LabellingItemFactory
from tests.factories import TEST_PASSWORD, UserFactory
from webapp.roles import Role
from webapp.storage import new_media_key, save_media

CHROMIUM = "/usr/bin/chromium"
SAMPLE_RATE = 16_000
SENTENCES = (
    "I can't believe you did that again.",
    "Well, that went just as planned, didn't it?",
    "Please tell me the train is not late this time.",
)
LENGTHS = (("10 s", 10), ("10 min", 600), ("60 min", 3600))


@dataclass(frozen=True)
class Case:
    name: str
    seconds: int
    peaks: bool
    path: str
    wav_bytes: int


@dataclass(frozen=True)
class Run:
    draw_ms: float
    bytes_before_draw: int
    audio_requests_before_draw: int


def speech(seconds: int) -> np.ndarray:
    """eSpeak sentences, repeated to `seconds`, over low noise (so pauses are not digital silence)."""
    spoken = []
    for sentence in SENTENCES:
        said = synthesize(sentence)
        spoken.append(resample_poly(said.samples.astype(np.float64), SAMPLE_RATE, said.sample_rate))
        spoken.append(np.zeros(SAMPLE_RATE // 3))
    one_round = np.concatenate(spoken).clip(-32000, 32000).astype(np.int16)
    tiled = np.resize(one_round, seconds * SAMPLE_RATE).astype(np.int32)
    tiled += np.random.default_rng(46).integers(-100, 100, tiled.size, dtype=np.int32)
    return np.asarray(tiled.clip(-32768, 32767), dtype=np.int16)


def make_cases(with_hour: bool) -> list[Case]:
    call_command("migrate", verbosity=0)
    UserFactory.create(username="bench-admin", role=Role.ADMIN)
    cases = []
    for name, seconds in LENGTHS:
        if seconds > 600 and not with_hour:
            continue
        samples = speech(seconds)
        data = to_wav_bytes(samples, SAMPLE_RATE)
        key = save_media(new_media_key("take", "wav"), data)
        peaks = waveform_peaks(samples, SAMPLE_RATE)  # what the analysis job stores
        # Before issue 46 the page decoded the whole audio; an hour is left out of that (115 MB).
        variants = (True, False) if seconds <= 600 else (True,)
        for with_peaks in variants:
            take = LabellingItemFactory.create(
                recording__audio_key=key, recording__duration_seconds=float(seconds)
            ).recording
            assert take is not None
            # {} and not None: a take with no peaks that the page does not make lazily.
            Take.objects.filter(pk=take.pk).update(peaks=peaks if with_peaks else {})
            label = f"{name}, {'peaks' if with_peaks else 'before peaks'}"
            cases.append(Case(label, seconds, with_peaks, f"/takes/{take.public_id}/", len(data)))
    return cases


def content_bytes(headers: dict[str, str]) -> int:
    span = re.fullmatch(r"bytes (\d+)-(\d+)/\d+", headers.get("content-range", ""))
    if span:
        return int(span[2]) - int(span[1]) + 1
    return int(headers.get("content-length", "0") or 0)


def one_run(browser: Any, base_url: str, state: Any, case: Case) -> Run:
    context = browser.new_context(storage_state=state, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.on(
        "console", lambda message: print("    console:", message.text) if message.type == "error" else None
    )
    seen: dict[tuple[str, str], tuple[int, bool]] = {}

    def received(response: Any) -> None:
        # blob: and data: URLs are the page's own copies, not bytes over the network.
        if response.url.startswith("http"):
            key = (response.url, response.headers.get("content-range", ""))
            seen[key] = (content_bytes(response.headers), "/media/a/" in response.url)

    page.on("response", received)
    page.goto(base_url + case.path, wait_until="commit")
    page.wait_for_selector("#waveform[data-drawn-at]", state="attached")
    draw_ms = float(page.locator("#waveform").get_attribute("data-drawn-at") or 0)
    # Every response whose headers arrived by the time the draw was seen, counted in full: an upper
    # bound of the bytes before the draw.
    responses_before = list(seen.values())
    context.close()
    return Run(
        draw_ms,
        sum(size for size, _ in responses_before),
        sum(1 for _, is_audio in responses_before if is_audio),
    )


def main() -> None:
    try:
        measure()
    finally:
        shutil.rmtree(VAR_DIR, ignore_errors=True)


def measure() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-hour", action="store_true", help="leave out the 60-minute take")
    args = parser.parse_args()
    print(f"Making the takes in {VAR_DIR} ...", flush=True)
    cases = make_cases(with_hour=not args.no_hour)
    from django.db import connections

    connections.close_all()
    from playwright.sync_api import sync_playwright

    env = {**os.environ, "ECHOSTUDIO_VAR_DIR": str(VAR_DIR), "WEB_CONCURRENCY": "2"}
    with (
        gunicorn(env, VAR_DIR / "gunicorn.log", app="bench.static_wsgi") as base_url,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required"],
        )
        login = browser.new_context()
        page = login.new_page()
        page.goto(base_url + "/accounts/login/")
        page.fill("input[name=username]", "bench-admin")
        page.fill("input[name=password]", TEST_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r"^(?!.*/accounts/login/).*$"))
        state = login.storage_state()
        login.close()
        for case in cases:  # warm-up, not counted: gunicorn's workers load the app on their first pages
            one_run(browser, base_url, state, case)
        results: dict[str, list[Run]] = {case.name: [] for case in cases}
        for run in range(args.runs):  # interleaved: a slow moment of the machine hits every case
            for case in cases:
                results[case.name].append(one_run(browser, base_url, state, case))
                print(f"  run {run + 1}/{args.runs}: {case.name} done", flush=True)
        browser.close()

    print(f"\nFirst drawn waveform of the take page, median of {args.runs} runs; {load_average()}")
    print(f"{'take':<26} {'WAV MB':>8} {'draw ms':>9} {'kB before draw':>15} {'audio requests':>15}")
    for case in cases:
        runs = results[case.name]
        print(
            f"{case.name:<26} {case.wav_bytes / 1e6:>8.1f} {statistics.median(r.draw_ms for r in runs):>9.0f}"
            f" {statistics.median(r.bytes_before_draw for r in runs) / 1000:>15.0f}"
            f" {statistics.median(r.audio_requests_before_draw for r in runs):>15.0f}"
        )


if __name__ == "__main__":
    main()
