"""Real Chromium, the whole EchoMind path: an admin imports a delivery set, an actor records a
delivery with its attribute as the instruction, a reviewer reviews it blind, a system's answers
are imported and the EchoMind leaderboard shows their numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import submit_verdict
from evaluation.echomind.models import Delivery
from tests.annotation.recording.support import analysed, heard
from tests.evaluation.echomind.fixture import audio_name, echomind_files
from tests.factories import SystemFactory, speech_like_wav
from tests.support.browser import log_in
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.browser


def as_user(page: Any, live_server: Any, username: str, path: str) -> None:
    page.context.clear_cookies()
    log_in(page, live_server, username, start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")


def test_admin_imports_actor_records_reviewer_reviews_and_the_leaderboard_shows_numbers(
    browser_page: Any,
    live_server: Any,
    users: dict[str, User],
    make_user: Any,
    media_root: Path,
    tmp_path: Path,
    screenshots: Path,
) -> None:
    page = browser_page
    others = [make_user(Role.REVIEWER, name) for name in ("rev2", "rev3")]
    fixture = echomind_files(with_audio=False)

    # 1. The admin imports the set (scripts and questions, no audio) and gives it to the actor.
    as_user(page, live_server, "admin", "/echomind/")
    page.set_input_files(
        "#echomind-files",
        files=[
            {"name": name.rsplit("/", 1)[-1], "mimeType": "application/json", "buffer": data}
            for name, data in fixture.items()
        ],
    )
    page.get_by_role("button", name="Import", exact=True).click()
    page.wait_for_selector("[data-testid=import-summary]")
    assert "3 new cases" in page.locator("[data-testid=import-summary]").inner_text()
    assert "refused" not in page.locator("[data-testid=import-files]").inner_text()
    page.get_by_role("link", name="Back to the delivery sets").click()
    assert "recording" not in page.locator("[data-testid=cases]").inner_text().lower()
    page.get_by_label("actor").check()
    page.get_by_role("button", name="Assign deliveries").click()
    page.wait_for_selector("text=Assigned deliveries")
    assert "Recording" in page.locator("[data-testid=delivery-EM-id_1-target]").inner_text()
    page.screenshot(path=str(screenshots / "echomind-sets.png"), full_page=True)

    # 2. The actor records the sad target delivery: the attribute is the instruction.
    as_user(page, live_server, "actor", "/studio/items/EM-id_1-target/")
    assert "Deliver with: Sad tone" in page.locator(".instructions").inner_text()
    page.set_input_files(
        "#audio-file", files=[{"name": "take.wav", "mimeType": "audio/wav", "buffer": speech_like_wav()}]
    )
    page.wait_for_selector("#preview:not([hidden])")
    page.click("#submit-take")
    page.locator("#take-history [data-testid=take]").first.wait_for()
    take = analysed(Take.objects.get(item__external_id="EM-id_1-target"))
    assert take.status == Take.Status.IN_REVIEW

    # 3. A reviewer plays it and answers the delivery's question; the other two accept as well.
    mine = Review.objects.get(take=take, reviewer=users["reviewer"])
    as_user(page, live_server, "reviewer", f"/review/{mine.public_id}/")
    question = page.locator("[data-testid=delivery-question]").inner_text()
    assert "Does this delivery carry sad tone" in question
    page.wait_for_selector("#waveform[data-ready=true]")
    page.click("#play-toggle")
    page.wait_for_selector("#review[data-unlocked=true]")
    page.keyboard.press("a")
    page.wait_for_function("() => !location.pathname.endsWith('/" + str(mine.public_id) + "/')")
    heard(take)
    for reviewer in others:
        submit_verdict(Review.objects.get(take=take, reviewer=reviewer).pk, reviewer, "accept")
    assert Delivery.objects.get(item__external_id="EM-id_1-target").item.state == Item.State.RECORDED

    # 4. The admin imports a system's answers; the leaderboard shows its numbers.
    SystemFactory.create(name="Parrot")
    answers = [
        {"question_id": "u1", "answer": "The answer is: [B]"},
        {"question_id": "u2", "answer": "Hmm, hard to say"},
        {"question_id": "u3", "answer": "A"},
        {"question_id": "r1", "answer": "The answer is: [A]"},
        {"question_id": "r2", "answer": "The answer is: [B]"},
        {"delivery": audio_name(1, "sad_tone", "weather", "target"), "transcript": "The forecast says it will rain"},
    ]  # fmt: skip
    as_user(page, live_server, "admin", "/echomind/")
    page.select_option("#echomind-system", label="Parrot")
    page.set_input_files(
        "#echomind-answers",
        files=[
            {
                "name": "parrot.jsonl",
                "mimeType": "application/jsonl",
                "buffer": "\n".join(json.dumps(a) for a in answers).encode(),
            }
        ],
    )
    page.get_by_role("button", name="Import answers").click()
    page.wait_for_selector("text=5 answers (1 unparseable)")
    page.get_by_role("link", name="EchoMind leaderboard").click()
    row = page.locator("[data-testid=echomind-leaderboard] tbody tr").first
    cells = [cell.inner_text() for cell in row.locator("th, td").all()]
    # Understanding 2 of 3 (one unparseable), reasoning 1 of 2, WER 1 of 7 words; under each
    # figure, n/N: the questions answered of those asked of every system, the deliveries transcribed.
    assert cells[:2] == ["Parrot", "66.7\n3/3"]
    assert cells[3] == "50.0\n2/2" and cells[5] == "1" and cells[6] == "14.3\n1/1"
    assert "not computed" in cells[7]
    page.screenshot(path=str(screenshots / "echomind-leaderboard.png"), full_page=True)
