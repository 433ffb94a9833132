"""Real Chromium under the production Content-Security-Policy: an actor sees and hears every take
before sending it. A take recorded from the microphone (Chromium's fake device: a beeping tone)
and a plain 48 kHz WAV picked from disk are each drawn as a waveform and play to their end in the
preview player, with no policy violation; the WAV is then submitted."""

from __future__ import annotations

import math
import struct
import time
import wave
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from tests.browser.test_content_security_policy import RECORD_VIOLATIONS
from tests.factories import ItemFactory
from tests.support.browser import log_in
from webapp.models import User

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("media_root")]

FAKE_MICROPHONE = (
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    # The test starts the preview from a script, not a click: allow it to make sound.
    "--autoplay-policy=no-user-gesture-required",
)

# Under the policy Playwright's wait_for_function (eval) cannot run: poll with evaluate instead.
DRAWN = """() => {
  const box = document.getElementById("preview-waveform");
  const host = box.firstElementChild;
  const canvases = host && host.shadowRoot ? host.shadowRoot.querySelectorAll("canvas") : [];
  return box.dataset.ready === "true" && Array.from(canvases).some((c) => c.width > 0);
}"""


def _wait(page: Any, script: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if page.evaluate(script):
            return
        page.wait_for_timeout(100)
    pytest.fail(f"never true in the page: {script}")


def _write_wav(path: Path, seconds: float = 1.2, rate: int = 48_000) -> None:
    frames = b"".join(
        struct.pack("<h", int(9000 * math.sin(2 * math.pi * 220 * n / rate)))
        for n in range(int(seconds * rate))
    )
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)


@pytest.fixture
def actor_page(
    open_browser_page: Callable[..., AbstractContextManager[Any]], live_server: Any, users: dict[str, User]
) -> Iterator[Any]:
    item = ItemFactory.create(actor=users["actor"])
    path = reverse("annotation:record_item", args=[item.external_id])
    with open_browser_page(*FAKE_MICROPHONE, bypass_csp=False, permissions=["microphone"]) as page:
        page.add_init_script(RECORD_VIOLATIONS)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        log_in(page, live_server, "actor", start=f"/accounts/login/?next={path}")
        page.wait_for_url(f"{live_server.url}{path}")
        page.errors = errors
        yield page


def _plays_to_the_end(page: Any) -> None:
    page.evaluate("document.getElementById('preview-audio').play()")
    _wait(page, "() => document.getElementById('preview-audio').ended")


def test_a_recorded_take_is_drawn_and_plays_before_it_is_sent(actor_page: Any, tmp_path: Path) -> None:
    page = actor_page
    page.click("#record-start")
    page.wait_for_selector("#record-stop:not([disabled])")
    _wait(page, "() => parseFloat(document.getElementById('record-clock').textContent) >= 1.5")
    page.click("#record-stop")
    page.wait_for_selector("#preview:not([hidden])")
    _wait(page, DRAWN)
    assert page.evaluate("document.getElementById('preview-audio').currentSrc").startswith("blob:")
    _plays_to_the_end(page)
    assert "cannot be drawn" not in page.inner_text("#upload-status")
    page.screenshot(path=str(tmp_path / "recorded-preview.png"))
    assert page.evaluate("window.__csp") == [] and page.errors == []


def test_an_uploaded_48_khz_wav_is_drawn_plays_and_is_sent(actor_page: Any, tmp_path: Path) -> None:
    page = actor_page
    wav = tmp_path / "take-48k.wav"
    _write_wav(wav)
    page.set_input_files("#audio-file", str(wav))
    page.wait_for_selector("#preview:not([hidden])")
    _wait(page, DRAWN)
    _plays_to_the_end(page)
    duration = page.evaluate("document.getElementById('preview-audio').duration")
    assert abs(duration - 1.2) < 0.05
    assert "cannot be drawn" not in page.inner_text("#upload-status")
    page.click("#submit-take")
    page.wait_for_selector("#upload-status:has-text('Take received')")
    assert page.evaluate("window.__csp") == [] and page.errors == []
