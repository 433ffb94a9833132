"""Request types for views behind `role_required` (so type checkers know who `request.user` is).

The Content-Security-Policy middleware and the login throttle are in webapp.security; keyset
pagination for the work queues is webapp.keyset.
"""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from webapp.models import User


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


class StudioRequest(HtmxRequest):
    """A request from a logged-in user (guaranteed by `role_required` / `login_required`)."""

    user: User
