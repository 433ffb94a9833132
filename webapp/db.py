"""Database helpers that several apps need (glue: it knows no app's models by name)."""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, connections, models

from webapp.lib.backoff import Backoff

P = ParamSpec("P")
R = TypeVar("R")
logger = logging.getLogger(__name__)


def transient_types() -> tuple[type[BaseException], ...]:
    """Return the connection errors of the database (Django wraps psycopg's and sqlite3's), of the
    broker (kombu wraps its transports') and of Redis used directly (the cache): what a restart or
    a network blip raises. Errors a retry cannot mend (IntegrityError, DataError, ProgrammingError)
    are not here.

    A library's errors are looked up only once something has imported it (it cannot raise before):
    importing `redis.exceptions` here loads the whole Redis client, 61 modules, into every web
    process that never talks to Redis."""
    found: list[type[BaseException]] = [OperationalError, InterfaceError]
    broker = sys.modules.get("kombu.exceptions")
    if broker is not None:
        found.append(broker.OperationalError)
    redis_errors = sys.modules.get("redis.exceptions")
    if redis_errors is not None:
        found += [redis_errors.ConnectionError, redis_errors.TimeoutError]
    return tuple(found)


def is_transient(exc: BaseException) -> bool:
    """Return True when `exc` (or what it was raised from) is a database or broker connection error."""
    transient = transient_types()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, transient):
            return True
        seen.add(id(current))
        current = current.__cause__
    return False


def job_backoff() -> Backoff:
    """Return the backoff jobs use for transient errors (settings JOB_RETRY_*)."""
    return Backoff(
        first=settings.JOB_RETRY_FIRST_SECONDS,
        cap=settings.JOB_RETRY_MAX_SECONDS,
        retries=settings.JOB_RETRY_TRANSIENT,
    )


def retry_transient(
    work: Callable[[], R],
    *,
    what: str,
    backoff: Backoff | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> R:
    """Return `work()`, calling it again after a capped exponential wait each time it fails on a
    transient error (`is_transient`), until `backoff.retries` retries are spent; then re-raise.

    The one retry loop for database and broker connection errors (the saleor habit): the job
    machinery wraps its own writes and every job function in it, so a PostgreSQL restart pauses a
    job instead of failing it. Between tries the broken connections are closed so the next query
    opens a new one. Inside a transaction nothing is retried: the transaction is lost with its
    connection, and only its outermost caller can start it again.
    """
    backoff = backoff or job_backoff()
    retry = 0
    while True:
        try:
            return work()
        except Exception as exc:
            if not is_transient(exc) or retry >= backoff.retries or connection.in_atomic_block:
                raise
            delay = backoff.delay(retry)
            retry += 1
            logger.warning(
                "%s: %s: %s; retry %d of %d in %.1f s",
                what,
                type(exc).__name__,
                " ".join(str(exc).split())[:300],  # one line: psycopg's messages span several
                retry,
                backoff.retries,
                delay,
            )
            close_connections()
            sleep(delay)


def close_connections() -> None:
    """Close this thread's database connections that no transaction holds (the next query reconnects)."""
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close()


# How messages name the database in use (never "PostgreSQL" on SQLite).
_BACKEND_NAMES = {"postgresql": "PostgreSQL", "sqlite": "SQLite", "mysql": "MySQL", "oracle": "Oracle"}


def backend_name() -> str:
    """Return the name of the database in use, as a message shows it ("PostgreSQL", "SQLite")."""
    return _BACKEND_NAMES.get(connection.vendor, connection.vendor)


class ThreadOrm:
    """The one rule for the ORM around thread pools (the judge client's, a build stage's).

    Django gives every thread its own database connection and closes none that a pool thread
    opened. A ThreadOrm is made on the thread that owns the work (a request or a job). Work that
    must see that thread's open transaction (the judge cache inside a job's or a test's atomic
    block) touches the database only when `on_owner_thread()`; work that commits on its own (a
    build stage's samples and LLM call log) runs on pool threads wrapped in `closing`, which closes
    the connection the pool thread opened when the work ends.
    """

    def __init__(self) -> None:
        self.owner = threading.get_ident()

    def on_owner_thread(self) -> bool:
        return threading.get_ident() == self.owner

    def closing(self, work: Callable[P, R]) -> Callable[P, R]:
        """Wrap `work` so that, run on a pool thread, it closes that thread's connection after."""

        @functools.wraps(work)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return work(*args, **kwargs)
            finally:
                if not self.on_owner_thread():
                    connection.close()

        return run


def refresh_planner_statistics(*tables: type[models.Model]) -> None:
    """Update the database's statistics of these models' tables after bulk writes.

    Right after tens of thousands of rows arrive, PostgreSQL still believes the tables are nearly
    empty and joins them with nested loops: the leaderboard query took 44 s instead of tens of ms
    in bench/leaderboard.py until the tables were analysed. Autovacuum would catch up within
    minutes; a judge run or an import does it at once (ANALYZE samples, it does not scan).
    """
    with connection.cursor() as cursor:
        for model in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def compare_and_set(rows: models.QuerySet[Any], **values: Any) -> int:
    """Write `values` to `rows` in one UPDATE whose conditions all sit on the updated rows; return
    how many rows it wrote.

    This is the one way to write "only if it is still X". A condition through a join (for example
    `.exclude(item__state=...)`) makes Django write `WHERE id IN (SELECT … WHERE version = …)`.
    Under PostgreSQL's READ COMMITTED, a second writer waiting for the first one's row lock then
    re-checks only `id IN (…)` against the subquery's old snapshot and overwrites: both callers
    are told they won (issue #30: two tabs autosaving one annotation both got 200). Conditions on
    the row itself (and `Exists(...)` subqueries over `OuterRef`) are re-checked on the row the
    lock waited for, so exactly one writer wins. Refuse any other shape instead of losing a save.
    """
    query = rows.query.chain()
    query.get_initial_alias()
    if query.count_active_tables() > 1:
        raise ValueError(
            f"compare_and_set on {rows.model.__name__}: a condition joins another table; "
            "write it as Exists(...) over OuterRef so the check stays on the updated row"
        )
    return rows.update(**values)
