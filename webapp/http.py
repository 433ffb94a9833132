"""Request types for views behind `role_required`, so type checkers know who `request.user` is."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from webapp.models import User


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


class StudioRequest(HtmxRequest):
    """A request from a logged-in user (guaranteed by `role_required` / `login_required`)."""

    user: User
