"""One error shape for every API response: {"detail": "...", "problems": [...]}.

`detail` is one sentence for the person who sent the request; `problems` lists each field or row
that was wrong (as "field: message" strings, or objects where a report has more structure).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found, server_error
from drf_spectacular.utils import OpenApiExample
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from webapp.outages import outage_response


class ProblemSerializer(serializers.Serializer[Any]):
    detail = serializers.CharField(help_text="Why the request was refused, for the person who sent it")
    problems = serializers.ListField(
        child=serializers.JSONField(),
        help_text="Each field or row that was wrong ('field: message', or a row report object)",
    )


PROBLEM_EXAMPLE = OpenApiExample(
    "Refused",
    value={"detail": "The request has problems.", "problems": ["split: “dev” is not a valid choice."]},
    response_only=True,
    status_codes=["400"],
)


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state."
    default_code = "conflict"


def problem(detail: str, code: int = status.HTTP_400_BAD_REQUEST, problems: Sequence[Any] = ()) -> Response:
    """Return an error response in the API's one shape."""
    return Response({"detail": detail, "problems": list(problems)}, status=code)


def flatten(errors: Any, field: str = "") -> list[str]:
    """Return DRF or Django form errors as 'field: message' strings, nested fields joined by dots."""
    if isinstance(errors, Mapping):
        found: list[str] = []
        for name, nested in errors.items():
            name = "" if name in ("non_field_errors", "__all__") else str(name)
            found += flatten(nested, f"{field}.{name}" if field and name else field or name)
        return found
    if isinstance(errors, Iterable) and not isinstance(errors, str):
        return [message for nested in errors for message in flatten(nested, field)]
    return [f"{field}: {errors}" if field else str(errors)]


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with every error rewritten into {"detail", "problems"}."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        problems = flatten(exc.detail)
        response.data = {
            "detail": problems[0] if len(problems) == 1 else "The request has problems.",
            "problems": problems,
        }
    else:
        data = response.data if isinstance(response.data, Mapping) else {}
        response.data = {"detail": str(data.get("detail", exc)), "problems": list(data.get("problems", []))}
    return response


def form_problems(errors: Mapping[str, Iterable[Any]]) -> list[str]:
    """Return a Django form's errors (form.errors) as 'field: message' strings."""
    return flatten({name: [str(message) for message in messages] for name, messages in errors.items()})


def api_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 404 for an unknown /api/ address, in the API's shape (pages keep their 404 page)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "No such API endpoint.", "problems": []}, status=404)
    return page_not_found(request, exception or Http404())


def api_server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 for /api/ in the API's shape (details stay in the server log); 503 with
    Retry-After when what failed was the database or the broker being down (webapp.outages)."""
    outage = outage_response(request, sys.exc_info()[1])
    if outage is not None:
        return outage
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "The server failed; the error is logged.", "problems": []}, status=500)
    return server_error(request)
