"""Keyset pagination for the work queues: "the rows after this one", never OFFSET.

An OFFSET page reads and throws away every row before it, so page 40 of a queue costs forty pages;
a keyset page starts where the last one ended, through the queue's own index (a range scan), at
the same cost anywhere in the list. The cursor names the last row shown by its sort key (a
timestamp) and its id, so rows that share a timestamp are neither skipped nor repeated.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Generic, TypeVar

from django.db.models import Model, Q, QuerySet

Row = TypeVar("Row", bound=Model)


@dataclass(frozen=True)
class KeysetPage(Generic[Row]):
    """One page of rows, the cursor of the page after it ("" when this is the last), and the total."""

    rows: list[Row]
    next_cursor: str
    count: int
    first: bool  # True on the first page (no cursor was given)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def keyset_page(
    rows: QuerySet[Row], *, key: str, descending: bool = False, after: str = "", size: int, count: bool = True
) -> KeysetPage[Row]:
    """Return the `size` rows of `rows` ordered by (`key`, id) that follow the cursor `after`.

    `key` is a non-null timestamp field; a cursor that cannot be read starts from the beginning.
    One query for the rows (one more row than shown tells whether a next page exists), one for
    the count when asked.
    """
    page = keyset_page_read(
        lambda position: list(
            keyset_slice(rows, key=key, descending=descending, position=position, size=size)
        ),
        key=key,
        after=after,
        size=size,
    )
    return replace(page, count=rows.order_by().count()) if count else page


def keyset_slice(
    rows: QuerySet[Row], *, key: str, descending: bool, position: tuple[datetime, int] | None, size: int
) -> QuerySet[Row]:
    """Return the read of one page: `rows` ordered by (`key`, id), after `position` (the last row
    shown: its key and id), one more row than shown."""
    order = [f"-{key}", "-pk"] if descending else [key, "pk"]
    page = rows.order_by(*order)
    if position is not None:
        moment, pk = position
        if descending:
            page = page.filter(Q(**{f"{key}__lte": moment}), Q(**{f"{key}__lt": moment}) | Q(pk__lt=pk))
        else:
            page = page.filter(Q(**{f"{key}__gte": moment}), Q(**{f"{key}__gt": moment}) | Q(pk__gt=pk))
    return page[: size + 1]


def keyset_page_read(
    read: Callable[[tuple[datetime, int] | None], list[Row]], *, key: str, after: str, size: int
) -> KeysetPage[Row]:
    """Return the page `read(position)` fetched (the rows of `keyset_slice` at the cursor `after`),
    its count the rows shown: for a caller that reads the slice its own way (`webapp.fixed_reads`)."""
    position = _read_cursor(after)
    fetched = read(position)
    shown = fetched[:size]
    following = _write_cursor(getattr(shown[-1], key), shown[-1].pk) if len(fetched) > size else ""
    return KeysetPage(rows=shown, next_cursor=following, count=len(shown), first=position is None)


def _write_cursor(moment: datetime, pk: int) -> str:
    return base64.urlsafe_b64encode(f"{moment.isoformat()}|{pk}".encode()).decode().rstrip("=")


def _read_cursor(cursor: str) -> tuple[datetime, int] | None:
    if not cursor or len(cursor) > 200:
        return None
    try:
        moment, pk = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().split("|")
        return datetime.fromisoformat(moment), int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
