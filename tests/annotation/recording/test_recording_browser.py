"""Real Chromium: an actor uploads a take and sees it pending; a reviewer reviews with the keyboard only."""

from __future__ import annotations

import pytest

from annotation.recording.models import Review, Take
from tests.annotation.recording.support import record
from tests.factories import ItemFactory
from tests.support.browser import log_in
from webapp.models import User

pytestmark = pytest.mark.browser


def log_in_to_queue(page, live_server, username: str) -> None:
    log_in(page, live_server, username)
    page.wait_for_selector("[data-testid=queue-title]")


def test_an_actor_uploads_a_take_and_sees_it_pending(
    browser_page, live_server, users: dict[str, User], take_wav: bytes
) -> None:
    page = browser_page
    ItemFactory.create(external_id="EE-0007", actor=users["actor"])
    log_in_to_queue(page, live_server, "actor")

    page.get_by_role("link", name="Record", exact=True).click()
    page.wait_for_url(f"{live_server.url}/studio/items/EE-0007/")
    page.set_input_files(
        "#audio-file", files=[{"name": "take.wav", "mimeType": "audio/wav", "buffer": take_wav}]
    )
    page.wait_for_selector("#preview:not([hidden])")
    page.wait_for_selector("#preview-waveform[data-ready=true]")  # wavesurfer drew the chosen file
    # Once the waveform is ready recorder.js never says it cannot be drawn: no need to wait longer.
    assert "cannot be drawn" not in page.locator("#upload-status").inner_text()
    page.click("#submit-take")

    pending = page.locator("#take-history [data-testid=take]")
    pending.first.wait_for()
    assert pending.count() == 1
    assert "Pending review" in pending.first.inner_text()
    assert "Take received" in page.locator("#upload-status").inner_text()
    assert Take.objects.get().status == Take.Status.ANALYSING


def test_a_refused_upload_shows_the_reason(browser_page, live_server, users: dict[str, User]) -> None:
    page = browser_page
    ItemFactory.create(external_id="EE-0008", actor=users["actor"])
    log_in_to_queue(page, live_server, "actor")
    page.goto(f"{live_server.url}/studio/items/EE-0008/")

    page.set_input_files(
        "#audio-file",
        files=[{"name": "notes.wav", "mimeType": "audio/wav", "buffer": b"just some text\n" * 50}],
    )
    page.click("#submit-take")

    page.wait_for_selector("#upload-status.error")
    assert "not audio we can read" in page.locator("#upload-status").inner_text()
    assert Take.objects.count() == 0


def test_a_reviewer_plays_accepts_and_rejects_with_the_keyboard(
    browser_page, live_server, users: dict[str, User], take_wav: bytes
) -> None:
    page = browser_page
    first = record(users["actor"], ItemFactory.create(external_id="EE-0001", actor=users["actor"]), take_wav)
    second = record(users["actor"], ItemFactory.create(external_id="EE-0002", actor=users["actor"]), take_wav)
    assert first.reviews.get().reviewer == second.reviews.get().reviewer == users["reviewer"]
    # The queue's order is a stable shuffle (not upload order): take it from the queue itself.
    first_review, second_review = Review.objects.open_for(users["reviewer"])
    log_in_to_queue(page, live_server, "reviewer")

    page.click("#start-reviewing")
    page.wait_for_url(f"{live_server.url}/review/{first_review.public_id}/")
    waveform = page.locator("#waveform")
    waveform.locator("div").first.wait_for()
    page.keyboard.press("Space")
    page.wait_for_selector("#waveform[data-playing=true]")
    page.keyboard.press("Space")
    page.wait_for_selector("#waveform[data-playing=false]")
    # Not played to the end yet: "a" gives no verdict, the page says why.
    page.keyboard.press("a")
    assert "Play the whole take once" in page.locator("[data-testid=playback-status]").inner_text()
    assert page.url == f"{live_server.url}/review/{first_review.public_id}/"
    page.keyboard.press("Space")
    page.wait_for_selector("#review[data-unlocked=true]")
    page.keyboard.press("a")

    page.wait_for_url(f"{live_server.url}/review/{second_review.public_id}/")
    first_review.refresh_from_db()
    assert first_review.verdict == Review.Verdict.ACCEPT

    # The new page's player must be ready before Space can start it (a key pressed sooner is lost).
    page.wait_for_selector("#waveform[data-ready=true]")
    page.keyboard.press("Space")
    page.wait_for_selector("#review[data-unlocked=true]")
    page.keyboard.press("r")
    page.wait_for_selector("#reasons:visible")
    page.keyboard.press("2")
    assert page.is_checked("input[name=reasons][value=wrong_intensity]")
    page.keyboard.press("Enter")

    page.wait_for_url(f"{live_server.url}/review/")
    second_review.refresh_from_db()
    assert (second_review.verdict, second_review.reasons) == (Review.Verdict.REJECT, ["wrong_intensity"])


@pytest.fixture
def page_with_microphone(open_browser_page, take_wav: bytes, tmp_path):
    """A Chromium page allowed to use a microphone that plays our test take in a loop.

    (Chromium's default fake microphone beeps at full scale, which the server rightly calls clipped.)
    """
    microphone = tmp_path / "microphone.wav"
    microphone.write_bytes(take_wav)
    with open_browser_page(
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-audio-capture={microphone}",
        "--autoplay-policy=no-user-gesture-required",
        permissions=["microphone"],
    ) as page:
        yield page


def test_an_actor_records_in_the_browser_with_a_level_meter(
    page_with_microphone, live_server, users: dict[str, User]
) -> None:
    page = page_with_microphone
    ItemFactory.create(external_id="EE-0009", actor=users["actor"])
    log_in_to_queue(page, live_server, "actor")
    page.goto(f"{live_server.url}/studio/items/EE-0009/")

    page.click("#record-start")
    page.wait_for_function("document.getElementById('level').value > 0.01")  # the meter follows the input
    page.wait_for_function("parseFloat(document.getElementById('record-clock').textContent) >= 1.5")
    page.click("#record-stop")
    page.wait_for_selector("#preview:not([hidden])")
    # The preview's waveform is drawn, and nothing claims it could not be.
    page.wait_for_selector("#preview-waveform[data-ready=true]")  # after which it never says otherwise
    assert "cannot be drawn" not in page.locator("#upload-status").inner_text()
    assert not page.locator("#upload-status.error").count()
    page.evaluate("document.getElementById('preview-audio').play()")  # the actor listens before submitting
    page.wait_for_function("document.getElementById('preview-audio').currentTime > 0.2")
    page.click("#submit-take")

    page.locator("#take-history [data-testid=take]").first.wait_for()
    # The player knows the take's length before anyone presses play (not 0:00 / 0:00).
    page.wait_for_function("document.querySelector('#take-history audio').duration > 1.0")
    take = Take.objects.get()
    assert take.original_format == "webm"
    assert take.duration_seconds > 1.0
