"""Personal API tokens: made and revoked by their owner, stored only as a SHA-256 digest.

A token is 32 random bytes, so a fast hash is enough (no password stretching needed): nobody can
guess a token from its digest, and lookup stays one indexed query per request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from webapp.api.throttles import FailedTokenThrottle
from webapp.db import compare_and_set
from webapp.models import ApiToken, User

TOKEN_PREFIX = "es_"
KEYWORDS = (b"token", b"bearer")
# Writing last-used on every request would turn each read into a write; a minute is precise enough.
LAST_USED_PRECISION = timedelta(minutes=1)


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    secret: str  # shown to its owner once, never stored


def digest_of(secret: str) -> str:
    """Return the stored form of a token."""
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(user: User, name: str) -> NewToken:
    """Create a personal token for the user; the secret is returned once and only its digest kept."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name.strip() or "API token", prefix=secret[:10], digest=digest_of(secret)
    )
    return NewToken(token, secret)


def revoke_token(user: User, token_id: int) -> bool:
    """Revoke one of the user's tokens; return False when they hold no such live token."""
    with transaction.atomic():
        return bool(
            compare_and_set(
                ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True),
                revoked_at=timezone.now(),
            )
        )


def user_for_secret(secret: str) -> User | None:
    """Return the active user a live token belongs to (noting when it was used), or None; their
    roles come in the same read (`webapp.roles.with_group_names`)."""
    # Imported here: webapp.roles imports DRF's views, whose settings import this module.
    from webapp.roles import remember_roles_of, with_group_names

    rows = list(
        with_group_names(ApiToken.objects.usable().select_related("user"), "user").filter(
            digest=digest_of(secret)
        )
    )
    if not rows:
        return None
    token = rows[0]
    remember_roles_of(token.user, rows)
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


class TokenAuthentication(BaseAuthentication):
    """DRF authentication by `Authorization: Token <secret>` (or `Bearer <secret>`)."""

    def authenticate(self, request: Request) -> tuple[User, None] | None:
        header = get_authorization_header(request).split()
        if not header or header[0].lower() not in KEYWORDS:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Send the header as 'Authorization: Token <your token>'.")
        throttle = FailedTokenThrottle()
        if (wait := throttle.wait_if_blocked(request)) is not None:
            raise exceptions.Throttled(wait, "Too many failed tokens from your address.")
        try:
            secret = header[1].decode()
        except UnicodeDecodeError as exc:
            throttle.record_failure(request, "undecodable token")
            raise exceptions.AuthenticationFailed("The token holds characters no token has.") from exc
        user = user_for_secret(secret)
        if user is None:
            throttle.record_failure(request, "unknown or revoked token")
            raise exceptions.AuthenticationFailed("This token is unknown or revoked.")
        return user, None

    def authenticate_header(self, request: Request) -> str:
        return "Token"


class TokenScheme(OpenApiAuthenticationExtension):
    """Describes TokenAuthentication in the OpenAPI schema (Swagger UI's Authorize button)."""

    target_class = "webapp.api.tokens.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A personal token from your account page, sent as `Token <token>`",
        }
