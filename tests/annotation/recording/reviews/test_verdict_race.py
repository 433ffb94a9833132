"""The last two verdicts arriving at the same moment still decide the take exactly once.

Run on PostgreSQL (CI) this shows the row locks at work; on SQLite the database lock serialises
the same way. The test holds the item's lock itself, so the two verdicts are certainly waiting
at the same time, then lets them go together.
"""

from __future__ import annotations

import threading
import time

from django.db import close_old_connections, connection, transaction

from annotation.recording.models import Item, Take
from annotation.recording.reviews import VerdictResult, submit_verdict
from tests.annotation.recording.support import decide, record
from tests.factories import ItemFactory
from webapp.models import User


def test_two_last_verdicts_at_once_give_exactly_one_outcome(
    transactional_db: None, users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    # given: a take in review with one accept in, two verdicts to come
    item = ItemFactory.create(actor=users["actor"])
    take = record(users["actor"], item, take_wav)
    decide(take, "accept")
    waiting = list(take.reviews.filter(verdict="pending"))
    results: list[VerdictResult] = []
    errors: list[BaseException] = []

    def give_verdict(review_id: int, reviewer: User) -> None:
        try:
            results.append(submit_verdict(review_id, reviewer, "accept"))
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=give_verdict, args=(review.pk, review.reviewer)) for review in waiting]

    # when: both verdicts arrive while the item is locked, and are then let go together
    with transaction.atomic():
        Item.objects.select_for_update().get(pk=item.pk)
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        assert all(thread.is_alive() for thread in threads), "each verdict must wait for the item lock"
        assert results == []
    for thread in threads:
        thread.join(timeout=30)

    # then: one of them decided, the other only recorded its verdict
    assert errors == []
    assert sorted(result.outcome for result in results) == ["accepted", "waiting"]
    take.refresh_from_db()
    item.refresh_from_db()
    assert take.status == Take.Status.ACCEPTED
    # The accepted recording went straight on to its annotators once the decision committed.
    assert (item.state, item.recording_id) == (Item.State.ANNOTATING, take.pk)
    assert list(take.reviews.values_list("verdict", flat=True)) == ["accept"] * 3
