"""Who reads the speech check's flags on a take: its actor and admins at once, each reviewer only
after their own verdict, nobody else; admins find flagged takes on their dashboard."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
from django.apps import apps
from django.test import Client, override_settings
from django.urls import reverse

from annotation.recording.models import Review, Take
from annotation.recording.reviews import submit_verdict
from tests.annotation.recording.support import decide, heard, record
from tests.factories import ItemFactory
from webapp.models import User
from webapp.roles import Role

SCRIPT_REASON = "The take may not say 'cart' where the script has it."
SPEAKER_REASON = "The voice sounds unlike this actor's accepted takes."
SHOWN = "The take may not say &#x27;cart&#x27; where the script has it."


def checked(take: Take, *flags: tuple[str, str]) -> Take:
    """Store a speech check with these (kind, reason) flags as the analysis does, flag included."""
    from annotation.audio.speech.take_check import review_flags

    speech = {"flags": [{"kind": kind, "reason": reason} for kind, reason in flags]}
    take.qc = {**take.qc, "speech": speech}
    take.flagged_for_review = bool(review_flags(speech))
    take.save(update_fields=["qc", "flagged_for_review"])
    return take


@pytest.fixture
def flagged_take(users: dict[str, User], review_panel: list[User], take_wav: bytes) -> Take:
    """A take in review whose script check doubts 'cart' (the models themselves: test_take_speech_check)."""
    with override_settings(SPEECH_CHECKS=False):
        take = record(
            users["actor"], ItemFactory.create(external_id="EE-CART", actor=users["actor"]), take_wav
        )
    heard(take)
    return checked(take, ("script", SCRIPT_REASON))


def page_of(client: Client, name: str, *args: Any) -> str:
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200
    return response.content.decode()


def test_the_actor_reads_the_flag_on_the_take_page_and_beside_the_take(
    flagged_take: Take, client_for: Callable[[str], Client]
) -> None:
    actor = client_for("actor")

    take_page = page_of(actor, "annotation:take_detail", flagged_take.public_id)
    record_page = page_of(actor, "annotation:record_item", "EE-CART")
    api = actor.get(reverse("annotation:api_item_takes", args=["EE-CART"])).json()

    assert SHOWN in take_page and "Flagged for review" in take_page
    assert 'data-testid="take-flag"' in record_page
    (listed,) = api
    assert listed["flagged_for_review"] is True and listed["flags"] == [SCRIPT_REASON]


def test_a_reviewer_reads_the_flag_only_after_their_verdict(
    flagged_take: Take, client_for: Callable[[str], Client]
) -> None:
    first, second, _ = flagged_take.reviews.order_by("pk").select_related("reviewer")
    reviewer = Client()
    reviewer.force_login(first.reviewer)

    before = page_of(reviewer, "annotation:review_take", first.public_id)
    queue = page_of(reviewer, "annotation:review_queue")
    submit_verdict(first.pk, first.reviewer, "accept", ())
    after = page_of(reviewer, "annotation:review_take", first.public_id)
    colleague = Client()
    colleague.force_login(second.reviewer)
    colleague_before = page_of(colleague, "annotation:review_take", second.public_id)

    for blind in (before, queue, colleague_before):
        assert "cart" not in blind and 'data-testid="speech-flags"' not in blind
    assert SHOWN in after and "once your verdict is in" in after
    assert Take.objects.get(pk=flagged_take.pk).status == Take.Status.IN_REVIEW  # still open to change


def test_reviewers_still_read_the_flag_once_the_take_is_decided(flagged_take: Take) -> None:
    decide(flagged_take, "reject", "reject", "accept", reasons=("misread_script",))
    review = Review.objects.filter(take=flagged_take).select_related("reviewer").first()
    assert review is not None
    client = Client()
    client.force_login(review.reviewer)

    assert SHOWN in page_of(client, "annotation:review_take", review.public_id)


def test_admins_see_flagged_takes_counted_and_linked_on_the_dashboard(
    flagged_take: Take,
    users: dict[str, User],
    take_wav: bytes,
    client_for: Callable[[str], Client],
) -> None:
    with override_settings(SPEECH_CHECKS=False):
        unflagged = ItemFactory.create(external_id="EE-FINE", actor=users["actor"])
        checked(
            record(users["actor"], unflagged, take_wav),
            ("trim", "0.2 s of silence at the end could be trimmed."),
        )
        voice = record(
            users["actor"], ItemFactory.create(external_id="EE-VOICE", actor=users["actor"]), take_wav
        )
    decide(
        checked(voice, ("speaker", SPEAKER_REASON), ("script", SCRIPT_REASON)), "accept", "accept", "accept"
    )
    admin = client_for("admin")

    dashboard = page_of(admin, "annotation:admin_dashboard")
    take_page = page_of(admin, "annotation:take_detail", flagged_take.public_id)

    assert "The speech check flagged 2 takes: 1 in review, 1 accepted." in dashboard
    assert "Script in doubt: 2 · Voice unlike the actor&#x27;s accepted takes: 1." in dashboard
    for take in (flagged_take, voice):
        assert reverse("annotation:take_detail", args=[take.public_id]) in dashboard
    assert "EE-FINE" not in dashboard  # advice for the actor is no flag for review
    # The one still in review is listed first.
    assert dashboard.index("EE-CART") < dashboard.index("EE-VOICE")
    assert SHOWN in take_page


@pytest.mark.parametrize("name", ["annotator", "lead", "evaluator", "norole"])
def test_no_other_role_reaches_a_flagged_take(
    flagged_take: Take, client_for: Callable[[str], Client], name: str
) -> None:
    client = client_for(name)

    for url in (
        reverse("annotation:take_detail", args=[flagged_take.public_id]),
        reverse("annotation:admin_dashboard"),
    ):
        response = client.get(url)
        assert response.status_code in (302, 403, 404)
        assert "cart" not in response.content.decode()


def test_another_actor_does_not_reach_the_take(flagged_take: Take, make_user: Callable[..., User]) -> None:
    client = Client()
    client.force_login(make_user(Role.VOICE_ACTOR, "other_actor"))

    response = client.get(reverse("annotation:take_detail", args=[flagged_take.public_id]))

    assert response.status_code == 404 and "cart" not in response.content.decode()


def test_the_migration_flags_takes_checked_before_the_column_existed(flagged_take: Take) -> None:
    Take.objects.filter(pk=flagged_take.pk).update(flagged_for_review=False)
    migration = importlib.import_module("annotation.migrations.0015_take_flagged_for_review")

    migration.flag_takes_already_checked(apps, None)

    assert list(Take.objects.flagged()) == [flagged_take]
