"""Two tabs autosaving one annotation at the same moment: one is saved, the other is told it is stale.

The race lost work when the version check sat in a subquery (`id IN (SELECT … version = …)`): on
PostgreSQL the second UPDATE waited for the first one's row lock and then re-checked only the
`id IN (…)` against its old snapshot, overwrote, and both tabs got 200. To make the race certain
instead of likely, the test holds the annotation's row lock itself until both saves have read the
row and are waiting to write it (PostgreSQL shows them waiting on a lock), then lets them go
together. On SQLite the database lock serialises the writers; the test runs there too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import close_old_connections, connection, transaction
from django.test import Client
from django.urls import reverse

from annotation.labelling.models import Annotation
from tests.annotation.labelling.support import form_data, perception, tom
from webapp.models import User

ROUNDS = 3


def _writers_waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        # Inside a transaction PostgreSQL keeps the first activity snapshot it read; drop it.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE 'UPDATE%%'"
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def _wait_until(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("the two saves never both waited for the row lock")
        time.sleep(0.01)


def _race(annotation: Annotation, annotator: User, version: int) -> dict[str, tuple[int, str]]:
    """Send two autosaves made from `version` at once; return each tab's status and answer."""
    answers: dict[str, tuple[int, str]] = {}
    errors: list[BaseException] = []

    def autosave(tab: str) -> None:
        try:
            client = Client()
            client.force_login(annotator)
            response = client.post(
                reverse("annotation:autosave", args=[annotation.pk]),
                form_data(perception(situation=f"written in {tab}"), tom(), version),
            )
            answers[tab] = (response.status_code, response.content.decode())
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            close_old_connections()
            connection.close()

    tabs = [threading.Thread(target=autosave, args=(tab,)) for tab in ("tabA", "tabB")]
    if connection.vendor == "postgresql":
        with transaction.atomic():
            Annotation.objects.select_for_update().get(pk=annotation.pk)
            for tab in tabs:
                tab.start()
            _wait_until(lambda: _writers_waiting_on_a_lock() >= 2)
    else:
        for tab in tabs:
            tab.start()
    for tab in tabs:
        tab.join(timeout=60)
    assert errors == []
    return answers


def test_two_tabs_autosaving_at_the_same_version_save_exactly_one(
    transactional_db: None, client_as: Callable[[User], Client], annotations: list[Annotation]
) -> None:
    # given: an opened annotation (the workbench starts the draft)
    annotation = annotations[0]
    annotator = annotation.annotator
    client_as(annotator).get(reverse("annotation:workbench", args=[annotation.pk]))
    for _ in range(ROUNDS):
        annotation.refresh_from_db()
        version = annotation.version

        # when: two tabs save from the same version at the same moment
        answers = _race(annotation, annotator, version)

        # then: one 200 and one 409, and the stored labels are the winner's
        statuses = sorted(status for status, _ in answers.values())
        assert statuses == [200, 409], answers
        winner = next(tab for tab, (status, _) in answers.items() if status == 200)
        loser = next(tab for tab in answers if tab != winner)
        assert "saved from another tab or window" in answers[loser][1]
        annotation.refresh_from_db()
        assert annotation.version == version + 1
        assert annotation.perception["situation"] == f"written in {winner}"
