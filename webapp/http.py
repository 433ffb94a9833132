"""Request types for views behind `role_required`, so type checkers know who `request.user` is,
and the middleware that sends the Content-Security-Policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django.conf import settings
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
