"""How often the API may be asked: per user, per address, and a strict allowance of failed tokens.

`UserThrottle` (scope "user") counts a signed-in user's requests, `AddressThrottle` (scope "anon")
an unauthenticated address's; both are DRF's, with rates from the settings. `FailedTokenThrottle`
counts only failed token authentications per address: a burst of guessed tokens gets 429 once the
allowance is spent, even a good token from that address until the window passes, and every
failure is logged with its address (never the token). A pentest sent 60 bad tokens in 0.3 s and
got 60 plain 403s.
"""

from __future__ import annotations

import logging

from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

logger = logging.getLogger("echostudio.security")


class UserThrottle(UserRateThrottle):
    scope = "user"


class AddressThrottle(AnonRateThrottle):
    scope = "anon"


class FailedTokenThrottle(SimpleRateThrottle):
    """Failed token authentications per client address (scope "failed_token")."""

    scope = "failed_token"
    # Set by SimpleRateThrottle.__init__ from the scope's rate.
    num_requests: int
    duration: int

    def get_cache_key(self, request: Request, view: object) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def _history(self, request: Request) -> list[float]:
        self.key = self.get_cache_key(request, None)
        self.now = self.timer()
        history: list[float] = cache.get(self.key, [])
        return [moment for moment in history if moment > self.now - self.duration]

    def wait_if_blocked(self, request: Request) -> float | None:
        """Return the seconds this address must wait before trying a token again, or None."""
        self.history = self._history(request)
        if len(self.history) < self.num_requests:
            return None
        return self.wait()

    def record_failure(self, request: Request, reason: str) -> None:
        """Count one failed token from this address and log it."""
        history = [self.timer(), *self._history(request)]
        cache.set(self.key, history, self.duration)
        logger.warning(
            "failed API token authentication from %s (%s; %d in the last %ds)",
            self.get_ident(request),
            reason,
            len(history),
            self.duration,
        )
