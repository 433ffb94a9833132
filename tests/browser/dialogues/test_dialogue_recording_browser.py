"""Real Chromium: an actor records turn 3 of a dialogue hearing turns 1-2 and the replies; a reviewer
of that turn hears the earlier turns for context, and the playback gate stays on the take itself."""

from __future__ import annotations

import re

import pytest

from annotation.recording.models import Item, Take
from tests.annotation.audio.audio_corpus import glide, harmonic_tone, wav_of
from tests.factories import DialogueFactory, ReviewFactory, TakeFactory
from tests.support.browser import log_in

pytestmark = pytest.mark.browser

HISTORY_AUDIO = "[data-testid=conversation-so-far] audio"
# Every history player has loaded its audio (a signed link the viewer may open) and knows its length.
ALL_PLAYABLE = (
    "() => { const players = [...document.querySelectorAll('[data-testid=conversation-so-far] audio')];"
    " return players.length === 4 && players.every(a => a.readyState >= 1 && a.duration > 0.3); }"
)


def dialogue_with_two_turns_recorded(actor) -> list[Item]:
    dialogue = DialogueFactory.create(external_id="ED-B", turns=3, turns__actor=actor)
    turns = list(dialogue.turns.order_by("turn"))
    for earlier, status in zip(turns[:2], (Take.Status.ACCEPTED, Take.Status.IN_REVIEW), strict=True):
        take = TakeFactory.create(item=earlier, actor=actor, status=status, duration_seconds=1.5)
        earlier.state = Item.State.RECORDED if status == Take.Status.ACCEPTED else Item.State.IN_REVIEW
        earlier.recording = take if status == Take.Status.ACCEPTED else None
        earlier.save()
    return turns


def test_an_actor_records_turn_three_hearing_turns_one_and_two(
    browser_page, live_server, transactional_db, users, media_root, screenshots
) -> None:
    page = browser_page
    take_wav = wav_of(harmonic_tone(glide(150.0, 220.0, seconds=1.2)))
    turns = dialogue_with_two_turns_recorded(users["actor"])

    log_in(page, live_server, "actor", start="/accounts/login/?next=/studio/")
    page.wait_for_url(f"{live_server.url}/studio/")
    assert page.locator("[data-testid=dialogue-heading]").count() == 1
    page.goto(f"{live_server.url}/studio/items/{turns[2].external_id}/")

    assert page.locator("[data-testid=history-take]").count() == 2
    assert page.locator("[data-testid=history-reply]").count() == 2
    page.wait_for_function(ALL_PLAYABLE)
    page.evaluate("document.querySelector('[data-testid=history-reply][data-turn=\"2\"]').play()")
    page.wait_for_function(
        "document.querySelector('[data-testid=history-reply][data-turn=\"2\"]').currentTime > 0.2"
    )
    assert turns[1].reference_reply in page.locator("[data-testid=conversation-so-far]").inner_text()
    page.screenshot(path=str(screenshots / "record-turn3.png"), full_page=True)

    page.set_input_files(
        "#audio-file", files=[{"name": "turn3.wav", "mimeType": "audio/wav", "buffer": take_wav}]
    )
    page.wait_for_selector("#preview:not([hidden])")
    page.click("#submit-take")
    page.locator("#take-history [data-testid=take]").first.wait_for()
    assert "Take received" in page.locator("#upload-status").inner_text()
    assert Take.objects.filter(item=turns[2]).count() == 1
    page.screenshot(path=str(screenshots / "record-turn3-sent.png"), full_page=True)


def test_turn_two_is_closed_until_turn_one_has_a_take(
    browser_page, live_server, transactional_db, users, media_root
) -> None:
    page = browser_page
    dialogue = DialogueFactory.create(external_id="ED-C", turns=2, turns__actor=users["actor"])

    log_in(page, live_server, "actor", start="/accounts/login/?next=/studio/")
    page.wait_for_url(f"{live_server.url}/studio/")
    page.goto(f"{live_server.url}/studio/items/{dialogue.external_id}.t2/")

    assert "Record turn 1 of this dialogue first" in page.locator("[data-testid=not-recordable]").inner_text()
    assert page.locator("#recorder").count() == 0


def test_a_reviewer_hears_the_earlier_turns_before_judging_turn_three(
    browser_page, live_server, transactional_db, users, media_root, screenshots
) -> None:
    page = browser_page
    turns = dialogue_with_two_turns_recorded(users["actor"])
    take = TakeFactory.create(
        item=turns[2], actor=users["actor"], status=Take.Status.IN_REVIEW, duration_seconds=1.5
    )
    review = ReviewFactory.create(take=take, reviewer=users["reviewer"])

    log_in(page, live_server, "reviewer", start="/accounts/login/?next=/review/")
    page.wait_for_url(f"{live_server.url}/review/")
    page.goto(f"{live_server.url}/review/{review.public_id}/")
    page.wait_for_selector("#waveform[data-ready=true]")

    page.wait_for_function(ALL_PLAYABLE)
    assert page.locator("[data-testid=history-take]").count() == 2
    page.evaluate("document.querySelector('[data-testid=history-take][data-turn=\"1\"]').play()")
    page.wait_for_function(
        "document.querySelector('[data-testid=history-take][data-turn=\"1\"]').currentTime > 0.2"
    )
    # Hearing the context opens nothing: the verdict waits for the take under review.
    assert page.locator("#accept").is_disabled()
    # as a word: "actor" is also inside attribute names such as data-zoom-factor
    assert not re.search(rf"\b{re.escape(users['actor'].username)}\b", page.content())
    page.screenshot(path=str(screenshots / "review-turn3.png"), full_page=True)

    page.click("#play-toggle")
    page.wait_for_selector("#review[data-unlocked=true]")
    assert page.locator("#accept").is_enabled()


def test_an_admin_follows_the_trajectory_and_builds_the_joined_preview(
    browser_page, live_server, transactional_db, users, media_root, screenshots
) -> None:
    page = browser_page
    dialogue_with_two_turns_recorded(users["actor"])

    log_in(page, live_server, "admin", start="/accounts/login/?next=/dialogues/")
    page.wait_for_url(f"{live_server.url}/dialogues/")
    page.get_by_role("link", name="ED-B").click()
    page.wait_for_url(f"{live_server.url}/dialogues/ED-B/")
    states = page.locator("[data-testid=turn-state]").all_inner_texts()
    assert states == ["Recorded", "In review", "Recording"]
    assert page.locator("[data-testid=dialogue-actor]").inner_text() == "actor"

    page.get_by_role("button", name="Build the preview").click()
    page.wait_for_selector("[data-testid=preview-audio]")
    # two takes of 1.5 s with their replies, three gaps: far longer than any one part
    page.wait_for_function("document.querySelector('[data-testid=preview-audio]').duration > 5")
    page.screenshot(path=str(screenshots / "dialogue-detail.png"), full_page=True)
