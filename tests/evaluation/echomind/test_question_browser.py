"""Real Chromium: an admin adds a question on a delivery set, is told why a bad answer key is
refused, fixes it, then edits the question; the reply-study and inference pages open from the set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaluation.echomind.models import DeliverySet, Question
from evaluation.echomind.transfer import import_layout
from tests.evaluation.echomind.fixture import echomind_files
from tests.evaluation.echomind.test_echomind_browser import as_user
from webapp.models import User

pytestmark = pytest.mark.browser


def test_an_admin_authors_a_question_fixing_the_key_the_form_refused(
    browser_page: Any, live_server: Any, users: dict[str, User], media_root: Path, screenshots: Path
) -> None:
    page = browser_page
    import_layout(echomind_files(with_audio=False), users["admin"])
    case = DeliverySet.objects.get(case_id="id_1")

    # the sets page links each case's questions
    as_user(page, live_server, "admin", "/echomind/")
    page.click("[data-testid=questions-id_1]")
    page.wait_for_url(f"{live_server.url}/echomind/sets/{case.pk}/questions/")
    assert "u1" in page.locator("[data-testid=questions]").inner_text()

    # a key beyond the options is refused, with the reason beside the field
    page.fill("#id_question_id", "em-pace")
    page.select_option("#id_question_type", "pace")
    page.fill("#id_text", "How fast does the speaker talk?")
    page.fill("#id_options", "Fast\nNormal\nSlow")
    page.fill("#id_key_target", "D")
    page.get_by_role("button", name="Add question").click()
    page.wait_for_selector("text=The answer key D is not one of the options (A, B, C).")
    page.screenshot(path=str(screenshots / "question-refused.png"), full_page=True)

    # fixed, it is added and listed
    page.fill("#id_key_target", "C")
    page.get_by_role("button", name="Add question").click()
    page.wait_for_selector("text=Added em-pace.")
    row = page.locator("[data-testid=question-em-pace]")
    assert "C. Slow" in row.inner_text()
    page.screenshot(path=str(screenshots / "questions.png"), full_page=True)

    # and edited: its text changes, its key stays
    row.get_by_role("link", name="Edit").click()
    page.fill("#id_text", "How quickly does the speaker talk?")
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector("text=Saved em-pace.")
    question = Question.objects.get(question_id="em-pace")
    assert (question.text, question.answer, question.delivery.role) == (
        "How quickly does the speaker talk?",
        "C",
        "target",
    )

    # the reply study and the inference job are a click away
    page.get_by_role("link", name="Listening studies").first.click()
    page.wait_for_selector("text=Listening study over EchoMind replies")
    page.screenshot(path=str(screenshots / "reply-study.png"), full_page=True)
    as_user(page, live_server, "admin", "/echomind/")
    page.click("[data-testid=echomind-inference]")
    page.wait_for_selector("text=EchoChat answers the EchoMind delivery sets")
    page.screenshot(path=str(screenshots / "echomind-inference.png"), full_page=True)
