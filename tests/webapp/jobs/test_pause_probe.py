"""The worker fixture's pause waits for a moment when the worker holds no database lock."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from tests.conftest import no_other_connection_holds_a_database_lock


@pytest.mark.django_db(transaction=True)
def test_the_probe_sees_another_connection_inside_a_transaction_and_its_end() -> None:
    # given: a second connection to the test database, as a worker process would hold
    other: Any
    if connection.vendor == "sqlite":
        import sqlite3

        other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
        # a reader mid-transaction: its SHARED lock alone would block every commit
        begin, hold = "BEGIN", "SELECT count(*) FROM django_migrations"
    else:
        import psycopg

        params = connection.get_connection_params()
        other = psycopg.connect(**params, autocommit=True)
        begin, hold = "BEGIN", "SELECT 1"
    try:
        assert no_other_connection_holds_a_database_lock()
        # when it stops inside a transaction
        other.execute(begin)
        other.execute(hold).fetchall()
        # then the probe sees it, and sees it gone once it ends
        assert not no_other_connection_holds_a_database_lock()
        other.execute("ROLLBACK")
        assert no_other_connection_holds_a_database_lock()
    finally:
        other.close()
