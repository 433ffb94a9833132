"""Real Chromium: an annotator opens turn 3 of a dialogue, plays the earlier turns' audio, reads the
assistant's replies, labels perception, ToM and the cross-turn fields, and submits; a lead then
adjudicates the turn with the same history and the cross-turn rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.dialogue.support import cross_turn, recorded_dialogue, turn_perception
from tests.annotation.labelling.support import assign
from tests.factories import GoldReferenceFactory
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def shot(page, folder: Path, name: str) -> None:
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def test_an_annotator_labels_turn_three_with_the_dialogue_history(
    open_browser_page, live_server, transactional_db, users, screenshots
) -> None:
    _, turns = recorded_dialogue(3)
    GoldReferenceFactory.create(
        item=turns[1],
        perception=turn_perception(emotion="fear", intensity="medium"),
        reference_response="Losing work is frightening; I'm here with you.",
    )
    Item.objects.filter(pk=turns[1].pk).update(state=Item.State.GOLD)
    (mine,) = assign(turns[2], users["annotator"])

    # The history's audio plays without a click on the native control (headless has no gesture).
    with open_browser_page("--autoplay-policy=no-user-gesture-required") as page:
        path = f"/annotate/{mine.pk}/"
        log_in(page, live_server, "annotator", start=f"/accounts/login/?next={path}")
        page.wait_for_url(f"{live_server.url}{path}")
        page.wait_for_selector("[data-waveform][data-ready=true]")

        # The dialogue so far: turns 1 and 2, each with its audio and the assistant's reply.
        history = page.locator("[data-testid=history-turn]")
        assert history.count() == 2
        assert turns[0].text in history.nth(0).inner_text()
        assert turns[0].reference_reply in history.nth(0).locator("[data-testid=history-reply]").inner_text()
        second_reply = history.nth(1).locator("[data-testid=history-reply]").inner_text()
        assert "Losing work is frightening" in second_reply and "gold reference reply" in second_reply
        previous = page.locator("[data-testid=previous-gold]").inner_text()
        assert "Turn 2 gold (adjudicated): fear, medium intensity" in previous
        for index in range(2):
            audio = history.nth(index).locator("[data-testid=history-audio]")
            audio.evaluate("a => a.play()")
            page.wait_for_function(
                "i => { const a = document.querySelectorAll('[data-testid=history-audio]')[i];"
                " return a.currentTime > 0.2 && a.duration > 1; }",
                arg=index,
            )
            audio.evaluate("a => a.pause()")
        shot(page, screenshots, "dialogue-turn-3-history")

        # Perception and ToM as for any item.
        for name, value in (
            ("polarity", "negative"),
            ("emotion", "fear"),
            ("intensity", "high"),
            ("pitch", "high"),
            ("energy", "normal"),
            ("rate", "normal"),
            ("intonation", "falling"),
        ):
            page.check(f"input[name=p_{name}][value={value}]")
        page.click("[data-testid=script-words] >> text=lost")
        page.fill("textarea[name=p_prosody_caption]", "Tight and quick, rising worry")
        page.fill("textarea[name=p_situation]", "Out of work and scared about money")
        page.fill("textarea[name=t_context]", "Third turn after a job loss; the advice did not land")
        page.fill("textarea[name=t_latent_need]", "To feel the fear is understood")
        page.fill("textarea[name=t_core_demand]", "Calm presence, not a plan")
        page.check("input[aria-label='Recommend Emotional validation']")
        # The cross-turn fields: what changed since turn 2 and how to adapt.
        section = page.locator("[data-testid=cross-turn]")
        assert "Emotion change since turn 2" in section.inner_text()
        page.check("input[name=x_emotion_change][value=intensified]")
        page.fill("textarea[name=x_emotion_change_cause]", "The advice felt like being rushed")
        page.check("input[name=x_last_strategy_helped][value=no]")
        page.fill("textarea[name=x_strategy_adaptation]", "Stop advising; validate the fear first")
        page.check("input[name=x_adaptation_strategies][value=emotional-validation]")
        section.scroll_into_view_if_needed()
        shot(page, screenshots, "dialogue-turn-3-labelled")

        page.click("[data-testid=submit]")
        page.wait_for_url(f"{live_server.url}/annotate/")
        assert f"Submitted {turns[2].external_id}." in page.content()

        # A lead adjudicates the turn: the same history above, the cross-turn rows in the comparison.
        page.click("text=Log out")
        adjudicate = f"/adjudicate/{turns[2].pk}/"
        log_in(page, live_server, "lead", start=f"/accounts/login/?next={adjudicate}")
        page.wait_for_url(f"{live_server.url}{adjudicate}")
        assert page.locator("[data-testid=history-audio]").count() == 2
        row = page.locator("tr[data-field='cross_turn.emotion_change']")
        assert row.locator("select[name=x_emotion_change]").input_value() == "intensified"
        page.select_option("select[name=x_last_strategy_helped]", "partly")
        shot(page, screenshots, "dialogue-turn-3-adjudication")
        page.click("[data-testid=save-gold]")
        page.wait_for_url(f"{live_server.url}/adjudicate/")

    gold = GoldReference.objects.current_of(turns[2])
    assert gold is not None and gold.cross_turn["last_strategy_helped"] == "partly"
    assert gold.cross_turn["emotion_change_cause"] == "The advice felt like being rushed"
    mine.refresh_from_db()
    assert mine.status == Annotation.Status.SUBMITTED
    assert mine.perception["stressed_words"] == ["lost"]
    assert mine.cross_turn == cross_turn(
        emotion_change_cause="The advice felt like being rushed",
        strategy_adaptation="Stop advising; validate the fear first",
    )
