"""Capped exponential backoff: each wait twice the last, never past the cap, a fixed number of them."""

from __future__ import annotations

import pytest

from webapp.lib.backoff import Backoff


def test_each_wait_doubles_until_the_cap() -> None:
    backoff = Backoff(first=0.5, cap=3.0, retries=5)

    assert list(backoff.delays()) == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backoff.total() == 9.5


def test_a_huge_retry_number_stays_at_the_cap() -> None:
    assert Backoff(first=1.0, cap=60.0, retries=3).delay(10_000) == 60.0


def test_a_server_asking_for_longer_is_obeyed_up_to_the_cap() -> None:
    backoff = Backoff(first=0.5, cap=10.0, retries=6)

    assert backoff.wait_for(0, None) == 0.5
    assert backoff.wait_for(0, 5.0) == 5.0
    assert backoff.wait_for(0, 3600.0) == 10.0
    assert backoff.wait_for(3, 1.0) == 4.0


@pytest.mark.parametrize(("first", "cap", "retries"), [(-1.0, 1.0, 1), (2.0, 1.0, 1), (0.5, 1.0, -1)])
def test_nonsense_is_refused(first: float, cap: float, retries: int) -> None:
    with pytest.raises(ValueError):
        Backoff(first=first, cap=cap, retries=retries)
