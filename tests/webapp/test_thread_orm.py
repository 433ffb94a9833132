"""webapp.db.ThreadOrm: a pool thread's connection is closed after its work; the owner's stays open."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from webapp.db import ThreadOrm


def _query_and_report_open() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return connection.connection is not None


@pytest.mark.django_db(transaction=True)
def test_a_pool_threads_connection_is_closed_after_its_work_and_the_owners_is_not():
    orm = ThreadOrm()
    work = orm.closing(_query_and_report_open)

    def in_pool() -> tuple[bool, bool]:
        was_open = work()
        return was_open, connection.connection is not None

    with ThreadPoolExecutor(max_workers=1) as pool:
        was_open, still_open = pool.submit(in_pool).result()
    assert (was_open, still_open) == (True, False)

    assert work() is True
    assert connection.connection is not None  # the owner thread keeps its connection
    assert orm.on_owner_thread()
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(orm.on_owner_thread).result() is False
