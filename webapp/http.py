"""What views share: request types for views behind `role_required` (so type checkers know who
`request.user` is), the middleware that sends the Content-Security-Policy, the login-throttling
backend, and keyset pagination for the work queues.

Keyset pagination: "the rows after this one", never OFFSET. An OFFSET page reads and throws away
every row before it, so page 40 of a queue costs forty pages; a keyset page starts where the last
one ended, through the queue's own index (a range scan), at the same cost anywhere in the list.
The cursor names the last row shown by its sort key (a timestamp) and its id, so rows that share
a timestamp are neither skipped nor repeated.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar, cast

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django_htmx.middleware import HtmxDetails

from webapp.lib.csp import HEADER, content_security_policy, s3_media_origins
from webapp.models import User


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


class StudioRequest(HtmxRequest):
    """A request from a logged-in user (guaranteed by `role_required` / `login_required`)."""

    user: User


def policy_from_settings() -> str:
    """Return the Content-Security-Policy for the configured media storage."""
    storage = cast(dict[str, Any], settings.STORAGES["default"])
    options: dict[str, Any] = storage.get("OPTIONS") or {}
    s3 = s3_media_origins(
        settings.S3_BUCKET, str(options.get("region_name") or ""), str(options.get("endpoint_url") or "")
    )
    return content_security_policy([*s3, *settings.CSP_MEDIA_ORIGINS])


class ContentSecurityPolicyMiddleware:
    """Add the Content-Security-Policy header (webapp.lib.csp) to every response that has none."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if HEADER not in response:
            response[HEADER] = policy_from_settings()
        return response


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' lockout check for every login that comes with a request (the login form,
    Django admin, HTTP basic auth); a login without one (a test client's `login()`, a script)
    has no address to throttle by and passes on to the password check."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


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
    order = [f"-{key}", "-pk"] if descending else [key, "pk"]
    ordered = rows.order_by(*order)
    position = _read_cursor(after)
    page = ordered
    if position is not None:
        moment, pk = position
        if descending:
            page = ordered.filter(Q(**{f"{key}__lte": moment}), Q(**{f"{key}__lt": moment}) | Q(pk__lt=pk))
        else:
            page = ordered.filter(Q(**{f"{key}__gte": moment}), Q(**{f"{key}__gt": moment}) | Q(pk__gt=pk))
    fetched = list(page[: size + 1])
    shown = fetched[:size]
    following = _write_cursor(getattr(shown[-1], key), shown[-1].pk) if len(fetched) > size else ""
    return KeysetPage(
        rows=shown,
        next_cursor=following,
        count=rows.order_by().count() if count else len(shown),
        first=position is None,
    )


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
