"""A job's pace: pieces per minute and the time left, from a clock the test moves."""

from __future__ import annotations

from webapp.lib.progress import Pace


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_pace_is_pieces_per_minute_and_the_rest_at_that_pace() -> None:
    clock = Clock()
    pace = Pace(1000, clock=clock)
    clock.now += 30
    assert pace.per_minute(100) == 200.0
    assert pace.seconds_left(100) == 900 * 60 / 200
    assert pace.summary(100) == "200 per minute, about 4 min left"


def test_before_anything_is_done_the_pace_is_unknown() -> None:
    clock = Clock()
    pace = Pace(10, clock=clock)
    assert pace.per_minute(0) is None
    assert pace.summary(0) == "measuring the pace"


def test_long_and_short_rests_read_naturally() -> None:
    clock = Clock()
    pace = Pace(10_000, clock=clock)
    clock.now += 60
    assert pace.summary(100) == "100 per minute, about 1 h 39 min left"
    assert pace.summary(9_990) == "9,990 per minute, under a minute left"
    pace.total = 50  # pieces found to need no work
    assert pace.seconds_left(100) == 0
