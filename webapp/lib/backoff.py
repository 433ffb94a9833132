"""Capped exponential backoff: how long to wait before each retry of something that failed for a
moment (a database restarting, a broker or web server briefly unreachable).

Plain numbers only, so the job machinery (``webapp.db.retry_transient``) and the API client
(``webapp.client.session``) share one rule without either importing the other's world.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Wait `first` seconds before the first retry, twice as long before each next one, never more
    than `cap`; give up after `retries` retries."""

    first: float
    cap: float
    retries: int

    def __post_init__(self) -> None:
        if self.first < 0 or self.cap < self.first or self.retries < 0:
            raise ValueError(f"a backoff needs 0 <= first <= cap and retries >= 0, not {self}")

    def delay(self, retry: int) -> float:
        """Return the seconds to wait before retry number `retry` (0 for the first retry)."""
        if retry < 0:
            raise ValueError("retry counts from 0")
        # min() before the power would overflow: 2.0 ** 2000 is inf as a float, fine, but large
        # ints are not, so the exponent is bounded first.
        return min(self.cap, self.first * 2.0 ** min(retry, 64))

    def delays(self) -> Iterator[float]:
        """Yield the wait before each retry, `retries` of them."""
        return (self.delay(retry) for retry in range(self.retries))

    def total(self) -> float:
        """Return how long every retry waits in all: the longest outage this backoff rides out."""
        return sum(self.delays())

    def wait_for(self, retry: int, asked: float | None) -> float:
        """Return the wait before retry `retry` when the server asked for `asked` seconds
        (`Retry-After`): the longer of the two, still never more than `cap`."""
        return min(self.cap, max(self.delay(retry), asked or 0.0))
