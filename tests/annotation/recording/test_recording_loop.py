"""The whole loop, as in appendix C.1: import, assign, upload, analysis, three blind reviews, decision."""

from __future__ import annotations

import re

from django.test import Client
from django.urls import reverse

from annotation.recording.items import assign_items, import_items
from annotation.recording.models import Item, Take
from tests.annotation.recording.support import analysed, decide, upload
from webapp.models import User

ITEMS_CSV = (
    b"external_id,text,scenario,target_emotion,emotion_variant,target_intensity,instructions\n"
    b'EE-0001,The package arrived this afternoon.,audio-dominant,sad,grief,high,"Heavy, slow."\n'
    b"EE-0002,Oh great another meeting.,modality-conflict,angry,sarcasm,medium,Drawn-out 'great'.\n"
)


def test_import_assign_upload_analyse_and_three_accepts_make_the_recording(
    users: dict[str, User], review_panel: list[User], take_wav: bytes, django_capture_on_commit_callbacks
) -> None:
    # given: items imported and assigned to the actor
    assert import_items(ITEMS_CSV, "items.csv").created == 2
    assign_items(Item.objects.all(), [users["actor"]])
    item = Item.objects.get(external_id="EE-0001")
    assert (item.actor, item.state) == (users["actor"], Item.State.RECORDING)

    # when: the actor uploads a take and its analysis job runs
    actor = Client()
    actor.force_login(users["actor"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = upload(actor, item, take_wav)
    assert response.status_code == 201
    assert len(callbacks) == 1, "the analysis job is enqueued once the upload commits"
    take = Take.objects.get(public_id=response.json()["id"])
    assert take.analysis_job is not None
    assert (take.analysis_job.kind, take.analysis_job.queue) == ("analyze_take", "default")
    item.refresh_from_db()
    assert item.state == Item.State.IN_REVIEW
    take = analysed(take)

    # then: measured and in review with three reviewers, none of them the actor
    assert take.status == Take.Status.IN_REVIEW
    assert round(take.qc["duration_seconds"], 2) == 1.2
    assert take.features["intonation"] == "rising"
    assert 150 < take.features["median_f0_hz"] < 220
    assert take.contours["pitch"]["times"]
    reviewers = {review.reviewer for review in take.reviews.all()}
    assert len(reviewers) == 3 and users["actor"] not in reviewers

    # when: three reviewers accept
    assert decide(take, "accept", "accept", "accept") == ["waiting", "waiting", "accepted"]

    # then: the take is the item's recording
    take.refresh_from_db()
    item.refresh_from_db()
    assert take.status == Take.Status.ACCEPTED
    assert (item.state, item.recording) == (Item.State.RECORDED, take)
    assert upload(actor, item, take_wav).status_code == 409, "a recorded item takes no more takes"


def test_a_reject_sends_the_item_back_and_the_next_take_can_be_accepted(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    # given: an assigned item with a take in review
    import_items(ITEMS_CSV, "items.csv")
    item = Item.objects.get(external_id="EE-0002")
    assign_items([item.pk], [users["actor"]])
    actor = Client()
    actor.force_login(users["actor"])
    first = analysed(Take.objects.get(public_id=upload(actor, item, take_wav).json()["id"]))

    # when: one of the three rejects, saying the sarcasm is not audible
    outcomes = decide(first, "accept", "reject", "accept", reasons=("scenario_not_conveyed",))

    # then: the item goes back to the actor, who sees why (and not who)
    assert outcomes[-1] == "rejected"
    item.refresh_from_db()
    first.refresh_from_db()
    assert (item.state, first.status) == (Item.State.RECORDING, Take.Status.REJECTED)
    page = actor.get(reverse("annotation:record_item", args=[item.external_id])).content.decode()
    assert "Scenario not conveyed (e.g. sarcasm not audible)" in page
    assert not any(re.search(rf"\b{review.reviewer.username}\b", page) for review in first.reviews.all())

    # when: the actor records again and all three accept the new take
    second = analysed(Take.objects.get(public_id=upload(actor, item, take_wav).json()["id"]))
    assert decide(second, "accept", "accept", "accept")[-1] == "accepted"

    # then: the second take is the recording, the first stays rejected
    item.refresh_from_db()
    first.refresh_from_db()
    assert (item.state, item.recording, first.status) == (Item.State.RECORDED, second, Take.Status.REJECTED)
