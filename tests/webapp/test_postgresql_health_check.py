"""A reused PostgreSQL connection is checked without a round trip, and a dead one is still replaced
before a request uses it (webapp.postgresql.base, issue 27)."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import close_old_connections, connection

from tests.conftest import only_on_postgresql
from webapp.postgresql.base import nothing_waiting

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    only_on_postgresql("the health check of the PostgreSQL backend")


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _end_backend(pid: int) -> None:
    """End the server side of a connection from another connection, as a restart would."""
    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def _wait_for_the_server_to_hang_up() -> None:
    deadline = time.monotonic() + 5
    while nothing_waiting(connection.connection) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_healthy_connection_is_kept_from_request_to_request() -> None:
    connection.close()  # a fresh one, far from its CONN_MAX_AGE in a long test session
    first = _backend_pid()
    assert nothing_waiting(connection.connection)

    close_old_connections()  # what request_started does
    assert _backend_pid() == first


def test_a_connection_the_server_ended_is_replaced_before_the_next_request_uses_it() -> None:
    ended = _backend_pid()
    _end_backend(ended)
    _wait_for_the_server_to_hang_up()
    assert not nothing_waiting(connection.connection)

    close_old_connections()
    assert _backend_pid() != ended  # no error: the check saw it gone and reconnected
