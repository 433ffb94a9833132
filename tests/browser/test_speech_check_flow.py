"""Real Chromium and the real speech models: an actor uploads an eSpeak NG take that reads 'house'
where the script says 'bank', and the take page names the word; a take reading another sentence
altogether is flagged as not matching its script (issue 39); once the right reading is
accepted, the workbench shows its words at their times under the waveform, and a segment drawn
with the mouse lands on word boundaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from annotation.labelling.models import Annotation
from annotation.recording.models import Take
from tests.annotation.audio.audio_corpus import glide, harmonic_tone, wav_of
from tests.annotation.labelling.support import assign
from tests.annotation.recording.support import analysed, decide, heard, record
from tests.annotation.recording.test_take_flags import SCRIPT_REASON, checked
from tests.annotation.recording.test_take_speech_check import SCRIPT, espeak_wav
from tests.browser.test_workbench_keeps_work import open_workbench
from tests.factories import ItemFactory
from tests.support.browser import log_in, wait_for_layout
from webapp.lib import vocabulary
from webapp.roles import Role

pytestmark = pytest.mark.browser


# Each word's left edge and width on screen, relative to the waveform's box.
WORD_BOXES = """() => {
  const wave = document.querySelector("[data-testid=waveform]").getBoundingClientRect();
  return Array.from(document.querySelectorAll("[data-word-ruler] li")).map((li) => {
    const box = li.getBoundingClientRect();
    return {text: li.firstChild.textContent.trim(), start: parseFloat(li.dataset.start),
            end: parseFloat(li.dataset.end), left: box.left - wave.left, width: box.width,
            visible: box.right > wave.left && box.left < wave.right};
  });
}"""


def test_the_take_page_names_the_misread_word_and_the_workbench_shows_the_word_ruler(
    open_browser_page: Any,
    live_server: Any,
    transactional_db: None,
    users: Any,
    make_user: Any,
    screenshots: Path,
) -> None:
    for n in (1, 2):
        make_user(Role.REVIEWER, f"panel{n}")  # three reviewers in all, as a take needs
    actor = users["actor"]
    misread = ItemFactory.create(external_id="EE-BANK", actor=actor, text=SCRIPT)
    other = ItemFactory.create(external_id="EE-OFFICE", actor=actor, text="The office is closed today.")
    with open_browser_page(viewport={"width": 1280, "height": 900}) as page:
        log_in(page, live_server, "actor")
        page.wait_for_selector("[data-testid=queue-title]")

        def upload_and_read_flags(item: Any, wav: bytes) -> tuple[str, str]:
            page.goto(f"{live_server.url}/studio/items/{item.external_id}/")
            page.set_input_files(
                "#audio-file", files=[{"name": "take.wav", "mimeType": "audio/wav", "buffer": wav}]
            )
            page.wait_for_selector("#preview-waveform[data-ready=true]")
            page.click("#submit-take")
            page.locator("#take-history [data-testid=take]").first.wait_for()
            take = analysed(Take.objects.get(item=item))  # the analysis job, run here
            assert take.status == Take.Status.IN_REVIEW and take.flagged_for_review
            page.reload()
            page.click("[data-testid=take-flag]")
            page.wait_for_selector("[data-testid=speech-flags]")
            return page.inner_text("[data-testid=speech-flags]"), page.inner_text("[data-testid=speech]")

        flags, figures = upload_and_read_flags(misread, espeak_wav(SCRIPT.replace("bank", "house")))
        assert "The take may not say 'bank' where the script has it." in flags
        assert "Flagged for review" in flags
        assert "Script\ndoubtful ('bank')" in figures
        page.screenshot(path=str(screenshots / "take-page-misread.png"), full_page=True)

        # A take reading "The quick brown fox ..." for "The office is closed today." (issue 39: it
        # used to read "Script: matches", every word as wrong as the take's median word).
        flags, figures = upload_and_read_flags(other, espeak_wav(SCRIPT))
        assert "Most of the take does not sound like its script." in flags
        assert "Script\ndoes not match" in figures
        assert "Speech above the noise (SNR)" in figures
        page.screenshot(path=str(screenshots / "take-page-other-sentence.png"), full_page=True)

    # The right reading, accepted by its three reviewers, becomes the recording an annotator labels.
    item = ItemFactory.create(
        external_id="EE-RIVER", actor=actor, text=SCRIPT, scenario=vocabulary.EMOTION_SHIFT
    )
    right = record(actor, item, espeak_wav(SCRIPT))
    assert decide(right, "accept", "accept", "accept")[-1] == "accepted"
    annotation = Annotation.objects.filter(item=item, annotator=users["annotator"]).first()
    if annotation is None:
        (annotation,) = assign(item, users["annotator"])
    words = right.qc["speech"]["words"]

    with open_browser_page(viewport={"width": 1280, "height": 900}) as page:
        open_workbench(page, live_server, annotation)
        page.wait_for_selector("[data-word-ruler].timed")
        wave = page.locator("[data-testid=waveform]").bounding_box()
        total = right.duration_seconds

        def at_its_time(box: dict[str, Any]) -> bool:
            return abs(box["left"] - box["start"] / total * wave["width"]) <= 4

        # The ruler lays its words out a frame after the waveform is drawn.
        boxes = wait_for_layout(page, WORD_BOXES, lambda found: bool(found) and all(map(at_its_time, found)))
        assert [box["text"] for box in boxes] == [word["text"] for word in words]
        # Each word sits at its time: left edge at start / duration of the waveform's width.
        for box in boxes:
            assert box["left"] == pytest.approx(box["start"] / total * wave["width"], abs=4), box
            assert box["width"] == pytest.approx((box["end"] - box["start"]) / total * wave["width"], abs=4)
        assert "phones/s" in page.inner_text("[data-testid=speaking-rate]")
        page.screenshot(path=str(screenshots / "workbench-word-ruler.png"), full_page=False)

        # A segment dragged from a little after "fox" starts to a little before "over" ends
        # snaps to those words' boundaries.
        fox = next(box for box in boxes if box["text"] == "fox")
        over = next(box for box in boxes if box["text"] == "over")
        y = wave["y"] + wave["height"] / 2
        page.mouse.move(wave["x"] + fox["left"] + 3, y)
        page.mouse.down()
        page.mouse.move(wave["x"] + over["left"] + over["width"] / 2, y, steps=5)
        page.mouse.move(wave["x"] + over["left"] + over["width"] - 3, y, steps=5)
        page.mouse.up()
        page.wait_for_selector("[data-testid=segments] tbody tr")
        start = float(page.input_value("[aria-label='Segment 1 start']"))
        end = float(page.input_value("[aria-label='Segment 1 end']"))
        assert (start, end) == (round(fox["start"], 2), round(over["end"], 2))

        # Zoomed in, the words follow the waveform: the first word's left edge moves with it.
        page.locator("[data-testid=workbench-title]").click()
        for _ in range(3):
            page.keyboard.press("+")
        widest = max(box["width"] for box in boxes)
        zoomed = wait_for_layout(
            page, WORD_BOXES, lambda found: max(box["width"] for box in found) > 2 * widest
        )
        visible = [box for box in zoomed if box["visible"]]
        assert 0 < len(visible) < len(zoomed)
        assert max(box["width"] for box in zoomed) > 2 * max(box["width"] for box in boxes)
        page.screenshot(path=str(screenshots / "workbench-word-ruler-zoomed.png"), full_page=False)


def test_a_reviewer_reads_the_flag_only_after_the_verdict_and_admins_find_it_on_the_dashboard(
    open_browser_page: Any, live_server: Any, transactional_db: None, users: Any, screenshots: Path
) -> None:
    take_wav = wav_of(harmonic_tone(glide(150.0, 220.0, seconds=1.2)))

    with override_settings(SPEECH_CHECKS=False):  # the flag as the models leave it (first test)
        take = record(
            users["actor"], ItemFactory.create(external_id="EE-CART", actor=users["actor"]), take_wav
        )
    checked(take, ("script", SCRIPT_REASON))
    heard(take)
    review = take.reviews.get()  # the one reviewer there is

    with open_browser_page(viewport={"width": 1280, "height": 900}) as page:
        log_in(page, live_server, "reviewer", start=f"/accounts/login/?next=/review/{review.public_id}/")
        page.wait_for_selector("#review[data-unlocked=true]")
        assert "cart" not in page.content() and page.locator("[data-testid=speech-flags]").count() == 0
        page.click("#accept")
        page.wait_for_url(f"{live_server.url}/review/")
        page.goto(f"{live_server.url}/review/{review.public_id}/")
        page.wait_for_selector("[data-testid=speech-flags]")
        assert SCRIPT_REASON in page.inner_text("[data-testid=speech-flags]")
        assert "Change to reject" in page.inner_text("#verdict-form")
        page.screenshot(path=str(screenshots / "review-after-verdict.png"), full_page=True)

    with open_browser_page(viewport={"width": 1280, "height": 900}) as page:
        log_in(page, live_server, "admin", start="/accounts/login/?next=/manage/")
        panel = page.locator("[data-testid=flagged-takes]")
        panel.wait_for()
        assert "The speech check flagged 1 take: 1 in review." in panel.inner_text()
        panel.get_by_role("link", name="EE-CART").click()
        page.wait_for_selector("[data-testid=speech-flags]")
        assert SCRIPT_REASON in page.inner_text("[data-testid=speech-flags]")
        page.goto(f"{live_server.url}/manage/")
        panel.screenshot(path=str(screenshots / "admin-flagged-takes.png"))
