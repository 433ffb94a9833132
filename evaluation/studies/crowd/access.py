"""Who may reach what of a crowd study: a link's rater, by the session their platform link opened.

An external rater is never logged in. Their session names one `CrowdRater` of one link (`bind`),
and every crowd page resolves the rater from it for that link only (`rater_for`): another study's
link, another rater's sample or a staff page finds nothing for them (404, or the login page). The
audio links their pages get are the evaluators' blind links signed for their seat's placeholder
user, which the media view serves to this session alone (`webapp.storage.STAND_IN_VIEWER_SESSION_KEY`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar
from uuid import UUID

from django.core import signing
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from evaluation.studies.crowd.models import CrowdLink, CrowdRater
from evaluation.studies.models import StudyAssignment, StudySlot
from webapp.api.throttles import count_hit, current_window
from webapp.security import client_ip
from webapp.storage import STAND_IN_VIEWER_SESSION_KEY

SESSION_RATER = "crowd_rater"
_TOKEN_SALT = "echostudio.crowd.rater"
RATE_WINDOW_SECONDS = 60
Owned = TypeVar("Owned", bound=Model)


def link_for(token: str) -> CrowdLink:
    """Return the crowd link a URL names; 404 for any other."""
    return get_object_or_404(CrowdLink.objects.select_related("study"), token=token)


def throttled(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Resolve the link of a crowd page and count the request against its per-address limit
    (`CrowdLink.requests_per_minute`, shared by every web process: `webapp.api.throttles`)."""

    @wraps(view)
    def wrapper(request: HttpRequest, token: str, *args: Any, **kwargs: Any) -> HttpResponse:
        link = link_for(token)
        window = current_window(f"crowd:{link.pk}:{client_ip(request)}", RATE_WINDOW_SECONDS, time.time())
        if count_hit(window) > link.requests_per_minute:
            response = render(request, "evaluation/studies/crowd/slow_down.html", status=429)
            response["Retry-After"] = str(max(int(window.until - time.time()), 1))
            return response
        return view(request, link, *args, **kwargs)

    return wrapper


def bind(request: HttpRequest, rater: CrowdRater) -> None:
    """Make this browser session the rater's (a new id on the same browser replaces the old one)."""
    if request.session.get(SESSION_RATER) != rater.pk:
        request.session.cycle_key()  # a session id seen before this rater arrived is not theirs
    request.session[SESSION_RATER] = rater.pk
    refresh_stand_in(request, rater)


def refresh_stand_in(request: HttpRequest, rater: CrowdRater) -> None:
    """Let the session hear audio as the rater's seat, once they hold one."""
    if rater.seat is not None:
        request.session[STAND_IN_VIEWER_SESSION_KEY] = rater.seat.user_id
    else:
        request.session.pop(STAND_IN_VIEWER_SESSION_KEY, None)


def rater_for(request: HttpRequest, link: CrowdLink) -> CrowdRater | None:
    """Return the session's rater on this link, None when the session holds none here."""
    rater_id = request.session.get(SESSION_RATER)
    if not isinstance(rater_id, int):
        return None
    return CrowdRater.objects.select_related("link__study", "seat").filter(pk=rater_id, link=link).first()


def assignment_for_crowd_rater(rater: CrowdRater, public_id: UUID) -> StudyAssignment:
    """Return one assignment of the rater's seat; 404 for any other (another rater's included)."""
    return _seat_own(
        rater,
        StudyAssignment.objects.select_related("study", "stimulus", "evaluator"),
        public_id,
        "evaluator_id",
    )


def slot_for_crowd_rater(rater: CrowdRater, public_id: UUID) -> StudySlot:
    """Return a slot of one of the rater's seat's comparison trials; 404 for any other."""
    return _seat_own(
        rater,
        StudySlot.objects.select_related("assignment__study", "assignment__stimulus", "part__sample"),
        public_id,
        "assignment__evaluator_id",
    )


def _seat_own(rater: CrowdRater, rows: QuerySet[Owned], public_id: UUID, seat_field: str) -> Owned:
    """Return the row of `rows` with this public id that the rater's seat holds (`seat_field` names
    the seat's user); 404 for a rater without a seat and for any row not theirs."""
    if rater.seat is None:
        raise Http404("No such sample.")
    found = rows.filter(public_id=public_id, **{seat_field: rater.seat.user_id}).first()
    if found is None:
        raise Http404("No such sample.")
    return found


def personal_token(link: CrowdLink, number: int) -> str:
    """Return the signed token of a generic link's rater `number` (what their personal link carries)."""
    return signing.Signer(salt=_TOKEN_SALT).sign(f"{link.pk}.{number}")


def token_rater(link: CrowdLink) -> Callable[[str], str | None]:
    """Return the check of a generic link's tokens: the rater's external id, None for a bad token."""

    def verify(token: str) -> str | None:
        try:
            value = signing.Signer(salt=_TOKEN_SALT).unsign(token)
        except signing.BadSignature:
            return None
        link_pk, _, number = value.partition(".")
        return f"rater-{number}" if link_pk == str(link.pk) and number.isdigit() else None

    return verify
