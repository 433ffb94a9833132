"""The account page where a person creates and revokes their personal API tokens."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from webapp.api.tokens import create_token, revoke_token
from webapp.http import StudioRequest

# What the account page offers; "" (the default) is a token that lasts until it is revoked.
EXPIRY_DAYS = ("", "7", "30", "90", "365")


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def api_tokens(request: StudioRequest) -> HttpResponse:
    """List my tokens (never their secrets) and create one, optionally expiring and read-only; a
    new secret is shown once, on this response."""
    secret = ""
    if request.method == "POST":
        days = request.POST.get("expires_in_days", "")
        if days not in EXPIRY_DAYS:
            return HttpResponseBadRequest("Choose an expiry the page offers.")
        secret = create_token(
            request.user,
            request.POST.get("name", "")[:100],
            expires_at=timezone.now() + timedelta(days=int(days)) if days else None,
            read_only=bool(request.POST.get("read_only")),
        ).secret
    tokens = request.user.api_tokens.all()
    return render(
        request,
        "webapp/api_tokens.html",
        {"tokens": tokens, "secret": secret, "expiry_days": [days for days in EXPIRY_DAYS if days]},
    )


@login_required
@require_POST
def api_token_revoke(request: StudioRequest, token_id: int) -> HttpResponse:
    """Revoke one of my tokens: scripts using it get 401 from the next request on."""
    if revoke_token(request.user, token_id):
        messages.success(request, "Token revoked.")
    else:
        messages.error(request, "No such live token of yours.")
    return redirect("api_tokens")
