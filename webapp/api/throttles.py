"""How often the API may be asked: per user, per address, and a strict allowance of failed tokens.

`UserThrottle` (scope "user") counts a signed-in user's requests. `AddressAllowance` (scope
"anon") counts an unauthenticated address's: it is the last authentication class, so it runs
before any permission refuses the request (DRF checks throttles after permissions, and a pentest
sent 1,500 anonymous requests in 43 s without one 429). `FailedTokenThrottle` counts failed token
authentications per address: a burst of guessed tokens gets 429 once the allowance is spent, even
a good token from that address until the window passes, and every failure is logged with its
address (never the token).

Every count is one atomic increment shared by every web process (`count_hit`): Redis INCR when a
cache server is configured, else a small file per counter updated under an exclusive file lock.
DRF's own throttles read a list from the cache and wrote it back, so 100 concurrent wrong tokens
all read "0 failures" and 98 of them were checked against an allowance of 10. Counts are kept per
fixed window of the rate's period; the address is the client's (webapp.security.client_ip).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from webapp.security import client_ip

logger = logging.getLogger("echostudio.security")

# A counter file untouched this long is of a client gone quiet (DRF's longest period is a day).
STALE_COUNTER_SECONDS = 2 * 24 * 3600


@dataclass(frozen=True)
class Window:
    name: str  # the throttle's key: whose requests are counted, in which scope
    number: int  # which window of its period this is (the time divided by the period)
    until: float  # when it ends (time.time())

    @property
    def key(self) -> str:
        return f"{self.name}:{self.number}"


def current_window(name: str, duration: int, now: float) -> Window:
    """Return the window of `duration` seconds `now` falls in (windows start at multiples of it, so
    no stored start is needed; a burst across a boundary may get twice the allowance, as with any
    fixed window)."""
    number = int(now // duration)
    return Window(name, number, float((number + 1) * duration))


def count_hit(window: Window, delta: int = 1) -> int:
    """Add `delta` to the window's counter and return the new count, atomically across processes.
    A negative `delta` gives back a hit (never below zero)."""
    if settings.THROTTLE_COUNTS == "cache":
        return _cache_count(window.key, max(int(window.until - time.time()) + 1, 1), delta)
    return _file_count(window, delta)


def _cache_count(key: str, ttl: int, delta: int) -> int:
    """The cache's part (Redis in production): INCRBY counts atomically; the window's first hit
    finds no counter and starts it with SET NX (of concurrent first hits, one sets, all count)."""
    try:
        return max(int(cache.incr(key, delta)), 0)
    except ValueError:  # no counter yet in this window (or, giving back, none to give back to)
        if delta <= 0:
            return 0
        cache.add(key, 0, ttl)
        try:
            return max(int(cache.incr(key, delta)), 0)
        except ValueError:  # still no counter: the cache is unreachable and fails open (webapp.cache)
            return 0


def _file_count(window: Window, delta: int) -> int:
    """The embedded default's part: one file per throttle key holding "window hits", read and
    rewritten under flock, which every process on the machine (gunicorn's workers, threads of
    each) takes in turn; a new window starts the count again."""
    folder = Path(settings.THROTTLE_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / hashlib.sha256(window.name.encode()).hexdigest()[:40]
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        fields = os.pread(descriptor, 64, 0).split()
        same_window = len(fields) == 2 and int(fields[0]) == window.number
        if not same_window and delta <= 0:
            return 0  # nothing counted in this window: nothing to give back
        hits = max((int(fields[1]) if same_window else 0) + delta, 0)
        # Fixed width, so a shorter record never leaves the end of a longer one behind.
        os.pwrite(descriptor, f"{window.number} {hits}".encode().ljust(64), 0)
    finally:
        os.close(descriptor)  # and with it the lock
    if hits == delta == 1:
        _sweep(folder, time.time())
    return hits


_last_sweep = 0.0


def _sweep(folder: Path, now: float) -> None:
    """Remove counter files of windows long over, at most once an hour per process."""
    global _last_sweep
    if now - _last_sweep < 3600:
        return
    _last_sweep = now
    for path in folder.iterdir():
        try:
            if path.stat().st_mtime < now - STALE_COUNTER_SECONDS:
                path.unlink()
        except FileNotFoundError:
            continue  # another process swept it first


def forget_all_counts() -> None:
    """Drop every counter (tests start from none)."""
    cache.clear()
    folder = Path(settings.THROTTLE_DIR)
    if folder.is_dir():
        for path in folder.iterdir():
            path.unlink(missing_ok=True)


class CountingThrottle(SimpleRateThrottle):
    """DRF's rate throttle on `count_hit`'s atomic counters, by the client's address unless a
    subclass keys it otherwise."""

    # Set by SimpleRateThrottle.__init__ from the scope's rate.
    num_requests: int
    duration: int
    # Set by allow_request when the request is counted.
    window: Window | None = None
    hits = 0

    def get_ident(self, request: Request) -> str:
        return client_ip(request)

    def get_cache_key(self, request: Request, view: object) -> str | None:
        """Return the counter's key for this request, or None when it is not counted."""
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def allow_request(self, request: Request, view: object) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.window = current_window(self.key, self.duration, self.timer())
        self.hits = count_hit(self.window)
        return self.hits <= self.num_requests

    def wait(self) -> float:
        return max(self.window.until - self.timer(), 0.0) if self.window else 0.0


class UserThrottle(CountingThrottle):
    """A signed-in user's requests (scope "user"); nothing for anyone else."""

    scope = "user"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if not request.user or not request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class AddressThrottle(CountingThrottle):
    """An unauthenticated address's requests (scope "anon")."""

    scope = "anon"


class AddressAllowance(BaseAuthentication):
    """The last authentication class: a request no other class authenticated is counted against
    its address's allowance here, so it gets 429 before the permission check can answer 403."""

    def authenticate(self, request: Request) -> None:
        throttle = AddressThrottle()
        if not throttle.allow_request(request, None):
            raise exceptions.Throttled(throttle.wait())
        return None


class FailedTokenThrottle(CountingThrottle):
    """Failed token authentications per client address (scope "failed_token").

    A token is checked only after taking one of the address's allowance (`reserve`), and a good
    token gives it back (`release`): a burst of guesses, however concurrent, gets at most the
    allowance checked. A script sending more good tokens at once than the allowance may see a 429
    while they are in flight; retrying after it is answered."""

    scope = "failed_token"

    def reserve(self, request: Request) -> float | None:
        """Take one of this address's allowance for a token about to be checked; return the seconds
        it must wait instead when the allowance is spent, else None."""
        if self.allow_request(request, None):
            return None
        return self.wait()

    def release(self) -> None:
        """Give back the reservation of a token that proved good."""
        if self.window is not None:
            count_hit(self.window, -1)

    def record_failure(self, request: Request, reason: str) -> None:
        """Log a failed token from this address (its reservation is kept: it counts)."""
        logger.warning(
            "failed API token authentication from %s (%s; %d in the last %ds)",
            self.get_ident(request),
            reason,
            self.hits,
            self.duration,
        )
