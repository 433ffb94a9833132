"""Real Chromium: an admin makes an EchoMind environment delivery on the sets page (a clip that is
not audio is refused in words first), and the mix waits for blind review."""

from __future__ import annotations

import pytest

from annotation.recording.models import Take
from tests.evaluation.echomind.fixture import environment_case, record_neutral
from tests.factories import tiny_wav
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def test_admin_mixes_an_environment_delivery_from_the_sets_page(
    open_browser_page, live_server, transactional_db, users, media_root, screenshots
) -> None:
    target = environment_case()
    record_neutral(target, users["actor"])

    with open_browser_page() as page:
        log_in(page, live_server, "admin", start="/accounts/login/?next=/echomind/")
        page.wait_for_selector("[data-testid=mix-form]")
        page.select_option("#mix-delivery", str(target.pk))

        # a text file named .wav is refused, and nothing is made
        page.set_input_files(
            "#mix-background", files=[{"name": "rain.wav", "mimeType": "audio/wav", "buffer": b"not audio"}]
        )
        page.click("[data-testid=mix-form] button[type=submit]")
        page.wait_for_selector("text=Not mixed")
        assert "not audio we can read" in page.locator("body").inner_text()
        assert not Take.objects.filter(item_id=target.item_id).exists()

        # a real clip at -12 dB makes the delivery's take, on its way to review
        page.select_option("#mix-delivery", str(target.pk))
        page.set_input_files(
            "#mix-background",
            files=[{"name": "rain.wav", "mimeType": "audio/wav", "buffer": tiny_wav(1.0, 90.0)}],
        )
        page.fill("#mix-gain", "-12")
        page.click("[data-testid=mix-form] button[type=submit]")
        page.wait_for_selector("text=goes to blind review")
        page.screenshot(path=str(screenshots / "echomind-mixed.png"), full_page=True)

        # the delivery, now in review, is no longer offered for mixing
        assert page.locator(f"#mix-delivery option[value='{target.pk}']").count() == 0

    take = Take.objects.get(item_id=target.item_id)
    assert take.actor_id == users["actor"].pk
    target.refresh_from_db()
    assert (target.background, target.background_gain_db) == ("rain.wav", -12.0)
