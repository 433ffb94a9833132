"""The benchmarks' arithmetic and tables (bench/figures.py), without a server."""

import math

import pytest

from bench import figures


def test_p95_interpolates_between_the_closest_ranks() -> None:
    assert figures.p95(list(range(1, 21))) == pytest.approx(19.05)
    assert figures.p95([7.0]) == 7.0


def test_p95_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError):
        figures.p95([])


def test_timing_takes_the_median_wall_time_and_the_mean_cpu() -> None:
    timed = figures.timing([3.0, 1.0, 2.0, 10.0], 30.0)
    assert (timed.median_ms, timed.cpu_ms, timed.count) == (2.5, 7.5, 4)
    assert timed.p95_ms == pytest.approx(8.95)


def test_cpu_spent_counts_only_processes_alive_at_both_readings() -> None:
    before = {1: 2.0, 2: 5.0, 3: 1.0}  # 3 ends in between; 4 starts
    after = {1: 2.5, 2: 5.25, 4: 9.0}
    assert figures.cpu_spent(before, after) == 0.75


def test_ratio_is_how_many_times_faster() -> None:
    assert figures.ratio(120.0, 10.0) == 12.0
    assert math.isinf(figures.ratio(5.0, 0.0))


def test_a_shrink_is_within_any_growth_limit() -> None:
    assert figures.within(0.8, 1.3)
    assert figures.within(1.3, 1.3)
    assert not figures.within(1.31, 1.3)


def test_sizes_read_with_their_units_and_print_back() -> None:
    assert figures.parse_sizes("10K,100K,1M") == [10_000, 100_000, 1_000_000]
    assert figures.parse_sizes("2000, 5_000") == [2000, 5000]
    assert [figures.size_label(n) for n in (10_000, 1_000_000, 1500)] == ["10K", "1M", "1500"]


@pytest.mark.parametrize("text", ["10K,1K", "0", "ten", "10K,10K"])
def test_sizes_that_do_not_grow_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        figures.parse_sizes(text)


def test_table_aligns_numbers_right_and_names_left() -> None:
    text = figures.table(["request", "ms", "q"], [["queue page", 12.345, 4], ["one item", None, 1200]])
    assert text.splitlines() == [
        "request       ms      q",
        "----------  ----  -----",
        "queue page  12.3      4",
        "one item       -  1,200",
    ]
