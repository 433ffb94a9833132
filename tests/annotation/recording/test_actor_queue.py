"""The actor's queue: assigned scripts by stage, the brief for each, and their takes with reasons."""

from __future__ import annotations

from django.urls import reverse

from annotation.recording.models import Item
from annotation.recording.reviews import submit_verdict
from tests.annotation.recording.support import heard, record
from tests.factories import ItemFactory
from webapp.models import User


def test_scripts_to_record_show_the_brief_and_past_takes_with_reasons(
    users: dict[str, User], review_panel: list[User], take_wav: bytes, client_for
) -> None:
    item = ItemFactory.create(
        external_id="EE-0042",
        actor=users["actor"],
        emotion_variant="pride",
        instructions="Warm, smiling voice.",
    )
    take = record(users["actor"], item, take_wav)
    heard(take)
    for review in take.reviews.all():
        submit_verdict(review.pk, review.reviewer, "reject", ["misread_script"], "")
    ItemFactory.create(external_id="EE-0099", actor=users["actor"], state=Item.State.RECORDED)
    ItemFactory.create(external_id="EE-0100")  # nobody's

    page = client_for("actor").get(reverse("annotation:actor_queue")).content.decode()

    assert "EE-0042" in page and "EE-0099" not in page and "EE-0100" not in page
    for expected in ("Implicit", "Happy (pride)", "intensity medium", "Warm, smiling voice.", "Record again"):
        assert expected in page
    assert "Misread script (3 reviewers)" in page
    assert 'data-status="rejected"' in page


def test_the_accepted_tab_lists_recorded_scripts(users: dict[str, User], client_for) -> None:
    ItemFactory.create(external_id="EE-0099", actor=users["actor"], state=Item.State.RECORDED)

    page = client_for("actor").get(reverse("annotation:actor_queue") + "?tab=accepted").content.decode()

    assert "EE-0099" in page
    assert reverse("annotation:record_item", args=["EE-0099"]) not in page, (
        "a recorded script takes no new take"
    )
