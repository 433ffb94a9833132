"""Django's PostgreSQL backend with a connection health check that costs no round trip (issue 27).

With CONN_HEALTH_CHECKS Django sends `SELECT 1` before the first query of every request that
reuses a connection: one more round trip on every request, as many as the request's own work on
the list APIs. A connection the server has ended (a restart, an idle timeout,
`pg_terminate_backend`) has something waiting in its socket, the server's last error and then
the end of the stream, while a healthy idle connection has nothing to read. So the socket is
looked at first, without a round trip, and only when something is waiting (or the connection is
not idle) is Django's `SELECT 1` asked, which then replaces a dead connection before the request
uses it. A peer gone without a word (a cable pulled) is seen by neither check in time: `SELECT 1`
would wait out the TCP timeout as well.
"""

from __future__ import annotations

import select
from typing import Any

import psycopg
from django.db.backends.postgresql import base
from psycopg import pq


def nothing_waiting(connection: psycopg.Connection[Any]) -> bool:
    """Return True when the connection is idle, open, and the server has sent it nothing since
    its last answer: nothing a round trip would find wrong, but for a silent network failure."""
    pgconn = connection.pgconn
    if connection.closed or connection.broken or pgconn.status != pq.ConnStatus.OK:
        return False
    if pgconn.transaction_status != pq.TransactionStatus.IDLE:
        return False
    try:
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        django: Any = self  # `pool` and the `health_check_*` flags are Django's; its stubs lack them
        if (
            not django.pool
            and self.connection is not None
            and django.health_check_enabled
            and not django.health_check_done
            and nothing_waiting(self.connection)
        ):
            django.health_check_done = True
            return
        super().close_if_health_check_failed()
