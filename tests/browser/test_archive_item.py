"""Real Chromium: an admin archives an item in Django admin (saying why) and restores it; every
take, review, label, revision and gold version stays, the item leaves the reviewers' queue and the
training data while archived, and both steps are in the audit log."""

from __future__ import annotations

import pytest

from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation, AnnotationRevision
from annotation.recording.models import Item, Review, Take
from ml.jobs.datasets import ready_entries
from tests.factories import (
    AnnotationFactory,
    GoldReferenceFactory,
    RecordedItemFactory,
    ReviewFactory,
    TakeFactory,
)
from tests.support.browser import log_in
from webapp import audit
from webapp.models import AuditEntry

pytestmark = pytest.mark.browser


def _work_of(item: Item) -> dict[str, int]:
    return {
        "takes": Take.objects.filter(item=item).count(),
        "reviews": Review.objects.filter(take__item=item).count(),
        "annotations": Annotation.objects.filter(item=item).count(),
        "revisions": AnnotationRevision.objects.filter(annotation__item=item).count(),
        "gold versions": GoldReference.objects.filter(item=item).count(),
    }


def _run_action(page, item: Item, action: str) -> None:
    page.check(f"input[name=_selected_action][value='{item.pk}']")
    page.select_option("select[name=action]", action)
    page.click("button[name=index]")


def test_archiving_and_restoring_an_item_keeps_all_its_work(
    browser_page, live_server, users, media_root
) -> None:
    item = RecordedItemFactory.create(external_id="ARC-1", state=Item.State.GOLD, split="train")
    assert item.recording is not None
    newer = TakeFactory.create(item=item, actor=item.recording.actor, status=Take.Status.IN_REVIEW)
    ReviewFactory.create(take=newer, reviewer=users["reviewer"])
    for annotator in (users["annotator"], users["lead"]):
        annotation = AnnotationFactory.create(
            item=item, annotator=annotator, status=Annotation.Status.SUBMITTED
        )
        AnnotationRevision.objects.create(annotation=annotation, version=1, perception={}, tom={})
    GoldReferenceFactory.create(item=item, version=1, is_current=False)
    GoldReferenceFactory.create(item=item, version=2, reference_response="That sounds hard.")
    before = _work_of(item)
    assert before == {"takes": 2, "reviews": 1, "annotations": 2, "revisions": 2, "gold versions": 2}
    assert Review.objects.open_for(users["reviewer"]).count() == 1
    assert len(ready_entries("sft", ["train"])[0]) == 1

    page = browser_page
    changelist = "/django-admin/annotation/item/"
    log_in(page, live_server, "admin", start=f"/accounts/login/?next={changelist}")
    page.wait_for_url(f"{live_server.url}{changelist}")

    _run_action(page, item, "archive_selected")
    page.wait_for_selector("#archive-reason")
    page.fill("#archive-reason", "Recorded from the wrong script version")
    page.click("input[type=submit][value=Archive]")
    page.wait_for_selector("text=1 archived")

    item.refresh_from_db()
    assert item.archived_at is not None and item.archived_by == users["admin"]
    assert item.archive_reason == "Recorded from the wrong script version"
    assert _work_of(item) == before
    # Out of use: the reviewer's queue, the current gold and the training data leave it out, and say so.
    assert Review.objects.open_for(users["reviewer"]).count() == 0
    assert GoldReference.objects.current_of(item) is None
    entries, excluded = ready_entries("sft", ["train"])
    assert entries == [] and excluded == {"archived (the item or its recording), not counted": 1}
    # The admin finds it under the archived filter.
    page.goto(f"{live_server.url}{changelist}?archived=yes")
    assert page.locator("#result_list").get_by_text("ARC-1").count() == 1
    page.goto(f"{live_server.url}{changelist}?archived=no")
    assert page.locator("#result_list").get_by_text("ARC-1").count() == 0

    page.goto(f"{live_server.url}{changelist}?archived=yes")
    _run_action(page, item, "restore_selected")
    page.wait_for_selector("text=1 restored")

    item.refresh_from_db()
    assert item.archived_at is None and item.archive_reason == ""
    assert _work_of(item) == before
    assert Review.objects.open_for(users["reviewer"]).count() == 1
    current = GoldReference.objects.current_of(item)
    assert current is not None and current.version == 2
    assert len(ready_entries("sft", ["train"])[0]) == 1
    logged = list(
        AuditEntry.objects.filter(object_id=str(item.pk), action__in=[audit.ARCHIVE, audit.RESTORE])
        .order_by("pk")
        .values_list("action", "actor_name")
    )
    assert logged == [(audit.ARCHIVE, "admin"), (audit.RESTORE, "admin")]
