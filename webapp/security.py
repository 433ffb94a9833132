"""The request-level defences every response and login goes through: the middleware that sends the
Content-Security-Policy (its rules: webapp.lib.csp), the login-throttling backend (django-axes),
and the client's address both it and the API throttles count by (`client_ip`). All are named in
settings (MIDDLEWARE, AUTHENTICATION_BACKENDS, AXES_CLIENT_IP_CALLABLE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from webapp.lib.client_address import client_address
from webapp.lib.csp import HEADER, content_security_policy, s3_media_origins


def client_ip(request: HttpRequest) -> str:
    """Return the address the request came from: REMOTE_ADDR, or behind a proxy named in
    ECHOSTUDIO_TRUSTED_PROXIES, the client it forwarded for (rules: webapp.lib.client_address)."""
    return client_address(
        str(request.META.get("REMOTE_ADDR") or ""),
        str(request.META.get("HTTP_X_FORWARDED_FOR") or ""),
        settings.TRUSTED_PROXIES,
    )


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
