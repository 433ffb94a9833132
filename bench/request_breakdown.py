"""Where a request's CPU goes, grouped: URL resolve, middleware, session and auth, form parsing,
ORM query building, ORM compile, ORM rows, database driver, template render, view code (issue 46).

Used by `bench/request_profile.py --breakdown`. Timing wrappers are put around the few functions
that open each part (Django's URL resolver, the session read and save, the request's POST parsing,
every SQL compiler's `as_sql`, the queryset's fetch and update, the cursor's execute and fetch,
the template's render, the handler's view call). Each wrapper charges the process CPU since the
last boundary to the part on top of a stack, then pushes its own: a nested part (the SQL compiled
inside a template's lazy read) is counted once, in the innermost part. Process CPU
(`time.process_time`), not wall time: waiting for PostgreSQL's answer costs nothing here, the
driver's own work does. About 150 boundaries per request, each well under a microsecond.
Figures, not a test.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PARTS = (
    "middleware and handler",
    "URL resolve",
    "session and auth",
    "form parsing",
    "view code",
    "ORM query building",
    "ORM compile",
    "ORM rows and saves",
    "database driver",
    "template render",
)


class Breakdown:
    """A stack of parts and the CPU charged to each (seconds)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.stack: list[str] = []
        self.last = 0.0
        self.requests: list[dict[str, float]] = []  # each request's parts

    def enter(self, part: str) -> None:
        now = time.process_time()
        if self.stack:
            self.spent[self.stack[-1]] += now - self.last
        self.stack.append(part)
        self.last = now

    def leave(self) -> None:
        now = time.process_time()
        self.spent[self.stack.pop()] += now - self.last
        self.last = now

    @contextmanager
    def request(self) -> Iterator[None]:
        self.spent = defaultdict(float)
        self.enter("middleware and handler")
        try:
            yield
        finally:
            self.leave()
            self.requests.append(dict(self.spent))

    def per_request_ms(self) -> dict[str, float]:
        """The median of each part over the requests (a loaded machine's outliers left out), ms."""
        return {
            part: statistics.median(spent.get(part, 0.0) for spent in self.requests) * 1000
            if self.requests
            else 0.0
            for part in PARTS
        }


def _wrap(owner: Any, name: str, part: str, breakdown: Breakdown, undo: list[Callable[[], None]]) -> None:
    original = owner.__dict__.get(name)
    if original is None:
        return

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        if not breakdown.stack:  # outside a measured request
            return original(*args, **kwargs)
        breakdown.enter(part)
        try:
            return original(*args, **kwargs)
        finally:
            breakdown.leave()

    setattr(owner, name, timed)
    undo.append(lambda: setattr(owner, name, original))


@contextmanager
def installed(breakdown: Breakdown) -> Iterator[Breakdown]:
    """Put the timing wrappers in place for the duration (restored afterwards)."""
    import psycopg
    from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
    from django.core.handlers.base import BaseHandler
    from django.db.backends import utils
    from django.db.models import query
    from django.db.models.sql import compiler
    from django.http import HttpRequest
    from django.template import base
    from django.urls import resolvers

    from webapp import sessions

    undo: list[Callable[[], None]] = []
    wraps: list[tuple[Any, str, str]] = [
        (BaseHandler, "_get_response", "view code"),
        (resolvers.URLResolver, "resolve", "URL resolve"),
        (DatabaseSessionStore, "load", "session and auth"),
        (DatabaseSessionStore, "save", "session and auth"),
        # Called by name from the middleware's closure: the module's attribute is the one used.
        (sessions, "user_of_session", "session and auth"),
        (HttpRequest, "_load_post_and_files", "form parsing"),
        (query.QuerySet, "_fetch_all", "ORM rows and saves"),
        (query.QuerySet, "update", "ORM rows and saves"),
        (query.QuerySet, "_update", "ORM rows and saves"),
        (query.QuerySet, "count", "ORM rows and saves"),
        (query.QuerySet, "exists", "ORM rows and saves"),
        (query.QuerySet, "bulk_create", "ORM rows and saves"),
        (query.QuerySet, "_insert", "ORM rows and saves"),
        (utils.CursorWrapper, "_execute", "database driver"),
        (utils.CursorWrapper, "_executemany", "database driver"),
        (base.Template, "render", "template render"),
    ]
    building = (
        "filter",
        "exclude",
        "annotate",
        "alias",
        "select_related",
        "only",
        "defer",
        "order_by",
        "values",
        "values_list",
        "select_for_update",
        "distinct",
        "__getitem__",
        "all",
        "none",
        "first",
    )
    wraps += [(query.QuerySet, method, "ORM query building") for method in building]
    wraps += [
        (getattr(compiler, name), "as_sql", "ORM compile")
        for name in (
            "SQLCompiler",
            "SQLInsertCompiler",
            "SQLDeleteCompiler",
            "SQLUpdateCompiler",
            "SQLAggregateCompiler",
        )
    ]
    wraps += [
        (cursor, method, "database driver")
        for cursor in (psycopg.Cursor, psycopg.ClientCursor, psycopg.ServerCursor)
        for method in ("fetchone", "fetchmany", "fetchall", "__iter__")
    ]
    for owner, name, part in wraps:
        _wrap(owner, name, part, breakdown, undo)
    try:
        yield breakdown
    finally:
        for restore in reversed(undo):
            restore()


def print_breakdown(name: str, breakdown: Breakdown, cpu_ms: float) -> None:
    """Print one request's parts, ms of CPU per request and shares; `cpu_ms` is the measured whole."""
    parts = breakdown.per_request_ms()
    total = sum(parts.values())
    print(
        f"\n--- where the CPU of one {name} request goes (medians of {len(breakdown.requests)} requests) ---"
    )
    for part in PARTS:
        print(f"  {part:24} {parts[part]:6.2f} ms  {parts[part] / total:5.0%}" if total else part)
    print(
        f"  {'sum of the medians':24} {total:6.2f} ms  (the median request without the wrappers: {cpu_ms:.2f} ms)"
    )
