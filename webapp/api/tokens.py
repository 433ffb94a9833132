"""Personal API tokens: made and revoked by their owner, stored only as a SHA-256 digest.

A token is 32 random bytes, so a fast hash is enough (no password stretching needed): nobody can
guess a token from its digest, and lookup stays one indexed query per request. A token may expire
(it stops authenticating then, as if revoked) and may be read-only (every write with it is refused,
whatever its owner may do). Revoking one also drops the answers kept for its idempotent writes.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request

from webapp import audit
from webapp.api.throttles import FailedTokenThrottle
from webapp.db import compare_and_set
from webapp.models import ApiToken, IdempotentRequest, User

TOKEN_PREFIX = "es_"
KEYWORDS = (b"token", b"bearer")
# Writing last-used on every request would turn each read into a write; a minute is precise enough.
LAST_USED_PRECISION = timedelta(minutes=1)
# What the audit log shows of a token (never its digest: the log is read by more people).
TOKEN_AUDIT_FIELDS = ("name", "prefix", "expires_at", "read_only", "revoked_at")


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    secret: str  # shown to its owner once, never stored


def digest_of(secret: str) -> str:
    """Return the stored form of a token."""
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(
    user: User, name: str, *, expires_at: datetime | None = None, read_only: bool = False
) -> NewToken:
    """Create a personal token for the user; the secret is returned once and only its digest kept."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=user,
            name=name.strip() or "API token",
            prefix=secret[:10],
            digest=digest_of(secret),
            expires_at=expires_at,
            read_only=read_only,
        )
        audit.record(
            actor=user,
            action=audit.TOKEN_CREATED,
            obj=token,
            after=audit.fields_of(token, *TOKEN_AUDIT_FIELDS),
        )
    return NewToken(token, secret)


def idempotency_principal(digest: str) -> str:
    """Return the principal a token's idempotency keys are kept under (webapp.idempotency)."""
    return f"token:{digest}"


def revoke_token(user: User, token_id: int) -> bool:
    """Revoke one of the user's tokens and forget the answers kept for its idempotent writes (a
    revoked token replayed them); return False when they hold no such live token."""
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().filter(pk=token_id, user=user).first()
        if token is None or not compare_and_set(
            ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True), revoked_at=timezone.now()
        ):
            return False
        IdempotentRequest.objects.filter(principal=idempotency_principal(token.digest)).delete()
        before = audit.fields_of(token, *TOKEN_AUDIT_FIELDS)
        token.refresh_from_db(fields=["revoked_at"])
        audit.record(
            actor=user,
            action=audit.TOKEN_REVOKED,
            obj=token,
            before=before,
            after=audit.fields_of(token, *TOKEN_AUDIT_FIELDS),
        )
        return True


def usable_token(secret: str) -> ApiToken | None:
    """Return the live token (not revoked or expired, of an active user) with this secret, or None."""
    return ApiToken.objects.usable().filter(digest=digest_of(secret)).first()


def token_for_secret(secret: str) -> ApiToken | None:
    """Return the live token with this secret (noting when it was used), or None; its user's
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
    return token


class TokenAuthentication(BaseAuthentication):
    """DRF authentication by `Authorization: Token <secret>` (or `Bearer <secret>`)."""

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        header = get_authorization_header(request).split()
        if not header or header[0].lower() not in KEYWORDS:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Send the header as 'Authorization: Token <your token>'.")
        # The allowance is taken before the token is looked up, so no burst of concurrent guesses
        # gets more of them checked than it allows; a good token gives its share back.
        throttle = FailedTokenThrottle()
        if (wait := throttle.reserve(request)) is not None:
            raise exceptions.Throttled(wait, "Too many failed tokens from your address.")
        try:
            secret = header[1].decode()
        except UnicodeDecodeError as exc:
            throttle.record_failure(request, "undecodable token")
            raise exceptions.AuthenticationFailed("The token holds characters no token has.") from exc
        token = token_for_secret(secret)
        if token is None:
            throttle.record_failure(request, "unknown, expired or revoked token")
            raise exceptions.AuthenticationFailed("This token is unknown or revoked, or has expired.")
        throttle.release()
        if token.read_only and request.method not in SAFE_METHODS:
            raise exceptions.PermissionDenied("This token is read-only: it may not change anything.")
        return token.user, token

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
