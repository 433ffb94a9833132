"""Reads of a fixed shape, compiled to SQL once per process instead of on every request (issue 46).

The reads every annotator request makes (the session with its user and roles, ...) have the same
shape every time; only a few values change (a session key, the time). Django builds the queryset
and compiles it to SQL afresh on each request: a fifth to a quarter of such a request's CPU
(docs/benchmarks.md). A `FixedRead` builds its queryset once with a stand-in value for each
parameter, compiles it, and remembers where each stand-in landed among the SQL's parameters. A
call then puts the real values in those places and runs the remembered SQL through the same
compiler, so the rows become model instances exactly as the queryset's own would (select_related
objects, annotations, converters): the tests compare the two on SQLite and PostgreSQL.

Only values that cannot change the SQL's shape take the compiled path: a text, an integer within
32 bits, a moment with its time zone. Anything else (a naive moment, which the ORM puts in the
current time zone first), (None is `IS NULL`, a list is `IN (...)` with a slot per item,
an out-of-range integer drops the lookup) is read by the ORM as before. A read whose parameters
do not each land in the SQL as themselves is refused when it is first compiled.
"""

from __future__ import annotations

import copy
import datetime
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.sql.compiler import SQLCompiler

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class Param:
    """A parameter's kind: its stand-in value, and how a value is written into the SQL's parameters
    (as the field would: a moment is adapted by the backend, as `DateTimeField` does)."""

    kind: str  # "text", "integer" or "moment"

    def stand_in(self, index: int) -> object:
        if self.kind == "text":
            return f"\x1ffixed-read-parameter-{index}\x1f"
        if self.kind == "integer":
            return 29_717 + index  # in every integer field's range: the ORM drops out-of-range lookups
        return datetime.datetime(1901, 2, 3, 4, 5, 6, 7_000 + index, tzinfo=datetime.UTC)

    def adapt(self, value: object, connection: Any) -> object:
        """Return the value as the SQL's parameter, or raise `Unusual` for one that could change
        the SQL's shape (None, a list, an integer outside 32 bits: the ORM drops such a lookup)."""
        if self.kind == "text" and isinstance(value, str):
            return value
        if self.kind == "integer" and type(value) is int and -(2**31) <= value < 2**31:
            return value
        if self.kind == "moment" and isinstance(value, datetime.datetime) and value.tzinfo is not None:
            return connection.ops.adapt_datetimefield_value(value)
        raise Unusual(f"{value!r} as a fixed read's {self.kind} parameter")


class Unusual(ValueError):
    """A value the compiled SQL may not fit: the read is made by the ORM instead."""


TEXT = Param("text")
INTEGER = Param("integer")
MOMENT = Param("moment")


@dataclass(frozen=True)
class _Compiled:
    queryset: QuerySet[Any]
    compiler: SQLCompiler
    sql: str
    slots: tuple[object, ...]  # each SQL parameter: a constant, or _Slot(name)
    # The converters of the read's columns, per connection: asked of every column's field on each
    # read, a tenth of a read's CPU, and the same every time. Weakly keyed, so a thread's closed
    # connection does not stay alive in a long-running worker.
    converters: weakref.WeakKeyDictionary[Any, Any] = field(default_factory=weakref.WeakKeyDictionary)


@dataclass(frozen=True)
class _Slot:
    name: str


class FixedRead(Generic[M]):
    """`build(**params)` returns a queryset whose SQL has the same shape whatever the values;
    `read(**values)` returns its rows (model instances), the SQL compiled on the first read, for the
    database that read used, and kept for the process: one database (and vendor) per process, as
    this project runs. `forget()` compiles again."""

    def __init__(self, build: Callable[..., QuerySet[M]], **params: Param) -> None:
        self.build = build
        self.params = params
        self._compiled: _Compiled | None = None
        self._lock = threading.Lock()

    def queryset(self, **values: object) -> QuerySet[M]:
        """The read as the ORM makes it, compiled on every call (what `read` must equal)."""
        return self.build(**values)

    def read(self, **values: object) -> list[M]:
        if values.keys() != self.params.keys():
            raise TypeError(f"a fixed read takes {sorted(self.params)}, not {sorted(values)}")
        compiled = self._compiled or self._compile()
        connection = connections[compiled.queryset.db]
        try:
            adapted = {name: param.adapt(values[name], connection) for name, param in self.params.items()}
        except Unusual:
            return list(self.build(**values))
        sql_params = tuple(adapted[slot.name] if isinstance(slot, _Slot) else slot for slot in compiled.slots)
        compiler = copy.copy(compiled.compiler)
        compiler.connection = connection
        compiler.as_sql = lambda *args, **kwargs: (compiled.sql, sql_params)  # type: ignore[method-assign,assignment]
        compiler.get_converters = partial(_known_converters, compiled, compiler.get_converters, connection)  # type: ignore[method-assign]
        rows = compiled.queryset._chain()  # type: ignore[attr-defined]
        rows.query.get_compiler = lambda *args, **kwargs: compiler
        return list(rows)

    def _compile(self) -> _Compiled:
        with self._lock:
            if self._compiled is not None:
                return self._compiled
            stand_ins = {
                name: param.stand_in(index) for index, (name, param) in enumerate(self.params.items())
            }
            queryset = self.build(**stand_ins)
            alias = queryset.db
            connection = connections[alias]
            if queryset._prefetch_related_lookups:  # type: ignore[attr-defined]
                raise ValueError("a fixed read cannot prefetch (its prefetches are further reads)")
            compiler = queryset.query.get_compiler(using=alias)
            sql, params = compiler.as_sql()
            written = {name: self.params[name].adapt(value, connection) for name, value in stand_ins.items()}
            slots: list[object] = []
            for value in params:
                names = [name for name, stand_in in written.items() if value == stand_in]
                slots.append(_Slot(names[0]) if names else value)
            missing = set(self.params) - {slot.name for slot in slots if isinstance(slot, _Slot)}
            if missing:
                raise ValueError(f"a fixed read's parameters {sorted(missing)} are not SQL parameters of it")
            compiled = _Compiled(queryset, compiler, sql, tuple(slots))
            self._compiled = compiled
            return compiled

    def forget(self) -> None:
        """Compile again on the next read (a test that swaps the database)."""
        self._compiled = None


def _known_converters(
    compiled: _Compiled, converters_of: Callable[[Any], Any], connection: Any, columns: Any
) -> Any:
    """Return the converters of a compiled read's columns for `connection`, found on its first read
    there (the compiler asks for them with the same columns on every read)."""
    known = compiled.converters.get(connection)
    if known is None:
        known = compiled.converters[connection] = converters_of(columns)
    return known
