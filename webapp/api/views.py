"""The account page where a person creates and revokes their personal API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from webapp.api.tokens import create_token, revoke_token
from webapp.http import StudioRequest


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def api_tokens(request: StudioRequest) -> HttpResponse:
    """List my tokens (never their secrets) and create one; a new secret is shown once, on this response."""
    secret = ""
    if request.method == "POST":
        secret = create_token(request.user, request.POST.get("name", "")[:100]).secret
    tokens = request.user.api_tokens.all()
    return render(request, "webapp/api_tokens.html", {"tokens": tokens, "secret": secret})


@login_required
@require_POST
def api_token_revoke(request: StudioRequest, token_id: int) -> HttpResponse:
    """Revoke one of my tokens: scripts using it get 401 from the next request on."""
    if revoke_token(request.user, token_id):
        messages.success(request, "Token revoked.")
    else:
        messages.error(request, "No such live token of yours.")
    return redirect("api_tokens")
