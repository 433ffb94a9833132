"""A request that needs the database or the broker while it is down: 503 with Retry-After, never 500.

Django turns every uncaught exception, raised in a view or in any middleware (the session read, the
idempotency key), into the project's 500 handler (`webapp.api.errors.api_server_error`); that
handler asks `outage_response` first. A PostgreSQL restart gave 493 answers of 500 in 7 s (issue
38); they are 503 now, which says "try again" to people, load balancers and the API client (which
sends a write again with the same Idempotency-Key, so it lands once). The transaction the request
ran in is rolled back by then, as for any error, so nothing half-done is kept.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse

from webapp.db import is_transient

logger = logging.getLogger(__name__)


def outage_response(request: HttpRequest, exc: BaseException | None) -> HttpResponse | None:
    """Return the 503 answer when `exc` is a database or broker connection error, else None."""
    if exc is None or not is_transient(exc):
        return None
    service = "database" if isinstance(exc, DatabaseError) else "task queue or cache"
    seconds = int(settings.OUTAGE_RETRY_AFTER_SECONDS)
    detail = (
        f"The {service} is unavailable for a moment; nothing was changed. Try again in {seconds} seconds."
    )
    logger.warning("%s %s answered 503: %s: %s", request.method, request.path, type(exc).__name__, exc)
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": detail, "problems": []}, status=503)
    else:
        response = HttpResponse(detail, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(seconds)
    return response
