"""The last two verdicts arriving at the same moment still decide the take exactly once.

Run on PostgreSQL (CI) this shows the row locks at work; on SQLite the database lock serialises
the same way. The test holds the item's lock itself, waits until both verdicts are seen waiting
for it, then lets them go together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import close_old_connections, connection, transaction

from annotation.recording.models import Item, Take
from annotation.recording.reviews import VerdictResult, submit_verdict
from tests.annotation.recording.support import decide, record
from tests.conftest import wait_until
from tests.factories import ItemFactory
from webapp.models import User


class StatementsInFlight:
    """Each thread's database statement that has been sent and has not returned yet."""

    def __init__(self) -> None:
        self.by_thread: dict[str, str] = {}

    def __call__(self, execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        name = threading.current_thread().name
        self.by_thread[name] = sql
        try:
            return execute(sql, *args)
        finally:
            self.by_thread.pop(name, None)

    def waiting_for_a_lock(self, threads: list[threading.Thread]) -> bool:
        """Return True when every thread is inside a statement that takes the lock the test holds:
        PostgreSQL's `SELECT ... FOR UPDATE` of the item, or SQLite's `BEGIN IMMEDIATE` (the write
        lock; SQLite has no row locks). Neither can return while the test holds that lock."""
        statements = [self.by_thread.get(thread.name, "") for thread in threads]
        return all("FOR UPDATE" in sql or sql.startswith("BEGIN") for sql in statements)


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

    in_flight = StatementsInFlight()

    def give_verdict(review_id: int, reviewer: User) -> None:
        try:
            with connection.execute_wrapper(in_flight):
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
        wait_until(
            lambda: in_flight.waiting_for_a_lock(threads),
            20,
            f"each verdict must wait for the item lock: {errors}",
        )
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
