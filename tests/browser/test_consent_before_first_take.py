"""Real Chromium: an actor who has not consented is sent from their script to the consent page,
reads the text, ticks the uses they allow by their labels, and comes back to the recorder; the take
they then send carries that consent. The consent page passes axe-core's WCAG 2.1 A/AA checks."""

from __future__ import annotations

import math
import struct
import wave
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from annotation.recording.consent.models import MODEL_TRAINING, RESEARCH_EVALUATION, ConsentRecord
from annotation.recording.models import Item, Take
from tests.browser.test_accessibility import AXE, _violations
from tests.conftest import skip_or_fail
from tests.factories import ItemFactory, UserFactory
from tests.support.browser import log_in
from webapp.roles import Role

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("media_root")]


def _write_wav(path: Path, seconds: float = 1.2, rate: int = 16_000) -> None:
    frames = b"".join(
        struct.pack("<h", int(9000 * math.sin(2 * math.pi * 220 * n / rate)))
        for n in range(int(seconds * rate))
    )
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)


def test_an_actor_consents_before_their_first_take(
    open_browser_page: Callable[..., AbstractContextManager[Any]], live_server: Any, tmp_path: Path
) -> None:
    actor = UserFactory.create(username="newactor", role=Role.VOICE_ACTOR, role__consent=False)
    item = ItemFactory.create(actor=actor, state=Item.State.RECORDING)
    record_path = reverse("annotation:record_item", args=[item.external_id])
    with open_browser_page() as page:
        log_in(page, live_server, "newactor", start=f"/accounts/login/?next={record_path}")
        page.wait_for_url(f"{live_server.url}/consent/?next=*")
        assert "You have not given consent yet" in page.inner_text("[data-testid=consent-status]")
        assert "withdraw at any time" in page.inner_text("[data-testid=consent-text]")
        assert page.locator("#recorder").count() == 0
        if AXE.is_file():
            assert _violations(page) == []

        # Nothing ticked: refused, nothing recorded, still on the page.
        page.click("button[value=give]")
        page.wait_for_selector("[data-testid=consent-error]")
        assert ConsentRecord.objects.filter(person=actor).count() == 0

        page.get_by_label("Research evaluation (benchmarks, listening studies, leaderboards)").check()
        page.get_by_label("Model training").check()
        page.click("button[value=give]")
        page.wait_for_url(f"{live_server.url}{record_path}")
        page.wait_for_selector("#recorder")

        wav = tmp_path / "first-take.wav"
        _write_wav(wav)
        page.set_input_files("#audio-file", str(wav))
        page.wait_for_selector("#preview:not([hidden])")
        page.click("#submit-take")
        page.wait_for_selector("#upload-status:has-text('Take received')")

    record = ConsentRecord.objects.get(person=actor)
    assert record.scopes == [RESEARCH_EVALUATION, MODEL_TRAINING]
    take = Take.objects.get(item=item)
    assert take.consent_id == record.pk
    assert list(Take.objects.consented_for(MODEL_TRAINING)) == [take]
    assert not Take.objects.consented_for("public_release").exists()
    if not AXE.is_file():
        skip_or_fail("axe-core is not installed (make install-dev runs npm ci)")
