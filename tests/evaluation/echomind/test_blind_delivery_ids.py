"""Reviewers and annotators never see an EchoMind delivery's role in its id (issue 41): the review
page that asks "Is this delivery neutral?" is not titled "…-neutral"."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from annotation.recording.blinding import blind_id
from annotation.recording.models import Item, Take
from evaluation.echomind.deliveries import create_delivery_set, ensure_default_taxonomy
from tests.factories import ReviewFactory, TakeFactory
from webapp.models import User


def test_a_delivery_id_loses_its_role_and_keeps_a_stable_distinct_code() -> None:
    shown = {role: blind_id(f"EM-id_3-{role}") for role in ("target", "neutral", "alternative")}
    assert all(text.startswith("EM-id_3-d") and role not in text for role, text in shown.items())
    assert len(set(shown.values())) == 3 and blind_id("EM-id_3-neutral") == shown["neutral"]
    assert blind_id("EE-0001") == "EE-0001" and blind_id("EM-id_3-neutrality") == "EM-id_3-neutrality"


@pytest.mark.django_db
def test_the_review_page_and_queue_of_a_neutral_delivery_do_not_say_neutral(
    client_for: Callable[[str], Client], users: dict[str, User]
) -> None:
    ensure_default_taxonomy()
    case = create_delivery_set(
        case_id="id_8", script_type="p", topic="", text="x", attribute="sad_tone", alternative=""
    )
    item = case.deliveries.get(role="neutral").item
    item.state = Item.State.IN_REVIEW
    item.save(update_fields=["state"])
    take = TakeFactory.create(item=item, actor=users["actor"], status=Take.Status.IN_REVIEW)
    review = ReviewFactory.create(take=take, reviewer=users["reviewer"])
    reviewer = client_for("reviewer")
    page = reviewer.get(f"/review/{review.public_id}/").content.decode()
    assert "Is this delivery neutral" in page  # the question it asks
    assert "EM-id_8-neutral" not in page and blind_id("EM-id_8-neutral") in page
    queue = reviewer.get("/review/").content.decode()
    assert "EM-id_8-neutral" not in queue and blind_id("EM-id_8-neutral") in queue
