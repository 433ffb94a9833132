"""Idempotency keys for API writes: a retried request is answered, not applied a second time.

A client sends `Idempotency-Key: <any unique string>` with a POST, PUT, PATCH or DELETE under
/api/. The first request with a key runs in one transaction together with the row that keeps its
answer, so either both the change and its answer are committed or neither is: a client whose
connection broke after the commit (a killed web worker) sends the same request again and gets
the stored answer (marked `Idempotent-Replayed: true`). Two copies arriving at once are
serialised by the key's unique index: the second waits for the first to commit and replays it.
The same key with a different request is refused (422), so a reused key never hides a new write.

Answers worth replaying are kept: 2xx and 4xx, except 401, 403 and 429, which say nothing about
the write (the same request may succeed once authenticated or no longer throttled). A 5xx or an
exception rolls everything back and the key stays unused. Keys are kept IDEMPOTENCY_KEY_HOURS.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from webapp.api.tokens import KEYWORDS, idempotency_principal, usable_token
from webapp.models import IdempotentRequest

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_KEY_LENGTH = 200
NOT_KEPT = frozenset({401, 403, 429})


class IdempotencyMiddleware:
    """Apply `Idempotency-Key` to API writes (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        key = request.headers.get(HEADER)
        if key is None or request.method not in WRITE_METHODS or not request.path.startswith("/api/"):
            return self.get_response(request)
        key = key.strip()
        if not key or len(key) > MAX_KEY_LENGTH:
            return _problem(400, f"{HEADER} must be 1 to {MAX_KEY_LENGTH} characters.")
        principal = principal_of(request)
        if principal is None:
            return self.get_response(request)  # refused as unauthenticated; nothing to keep
        return answer_once(request, principal, key, self.get_response)


def principal_of(request: HttpRequest) -> str | None:
    """Return who sent the request, as keys are scoped: the session's user or the token's digest.

    Keys are per principal, so one client's key never replays another's answer. A token counts only
    while it may write: a revoked, expired or read-only one gets no principal, so its request goes
    on to be refused by authentication instead of being answered from what was kept."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    keyword, _, secret = request.headers.get("Authorization", "").strip().partition(" ")
    if keyword.lower().encode() in KEYWORDS and secret.strip():
        token = usable_token(secret.strip())
        if token is not None and not token.read_only:
            return idempotency_principal(token.digest)
    return None


def fingerprint_of(request: HttpRequest) -> str:
    """Return what must be the same for a request to count as a retry of the first one.

    A multipart upload is not read here (a take can be hundreds of megabytes, and reading it would
    defeat Django's streaming upload): its method, path, query, type and length stand for it."""
    digest = hashlib.sha256()
    content_type = request.content_type or ""
    for part in (request.method or "", request.get_full_path(), content_type):
        digest.update(part.encode() + b"\0")
    if content_type.startswith("multipart/"):
        digest.update(request.headers.get("Content-Length", "").encode())
    else:
        digest.update(request.body)
    return digest.hexdigest()


def answer_once(
    request: HttpRequest, principal: str, key: str, get_response: Callable[[HttpRequest], HttpResponse]
) -> HttpResponse:
    """Run the request once for (principal, key) and keep its answer; replay it to any retry."""
    fingerprint = fingerprint_of(request)
    _forget_expired(principal, key)
    with transaction.atomic():
        try:
            with transaction.atomic():
                record = IdempotentRequest.objects.create(
                    principal=principal, key=key, fingerprint=fingerprint
                )
        except IntegrityError:
            record = None
        if record is not None:
            response = get_response(request)
            if response.status_code >= 500:
                transaction.set_rollback(True)  # the write failed: undo it and leave the key unused
                return response
            if response.status_code in NOT_KEPT or response.streaming:
                record.delete()
                return response
            record.status_code = response.status_code
            record.content_type = response.get("Content-Type", "")
            record.body = response.content
            record.save(update_fields=["status_code", "content_type", "body"])
            return response
    # Another request holds (or held) this key; its insert committed before ours was refused.
    earlier = IdempotentRequest.objects.filter(principal=principal, key=key).first()
    if earlier is None:
        return _problem(409, f"A request with this {HEADER} is in progress; send it again shortly.")
    if earlier.fingerprint != fingerprint:
        return _problem(422, f"This {HEADER} was used for a different request; use a new key.")
    replay = HttpResponse(bytes(earlier.body), status=earlier.status_code, content_type=earlier.content_type)
    replay[REPLAYED_HEADER] = "true"
    return replay


def _forget_expired(principal: str, key: str) -> None:
    cutoff = timezone.now() - timedelta(hours=settings.IDEMPOTENCY_KEY_HOURS)
    IdempotentRequest.objects.filter(principal=principal, key=key, created_at__lt=cutoff).delete()


def purge_expired_keys() -> int:
    """Delete keys older than IDEMPOTENCY_KEY_HOURS; return how many (run by beat)."""
    cutoff = timezone.now() - timedelta(hours=settings.IDEMPOTENCY_KEY_HOURS)
    return int(IdempotentRequest.objects.filter(created_at__lt=cutoff).delete()[0])


def _problem(status: int, detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status, json_dumps_params={"ensure_ascii": False})
