"""The listening rule (webapp.lib.listening): were all of a file's bytes sent, and can it have played by now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from webapp.lib.listening import (
    PLAYBACK_SLACK_SECONDS,
    bytes_covered,
    could_have_played_to_the_end,
    merge_spans,
    ranges_cover,
)

START = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_spans_merge_when_they_overlap_or_touch_and_stay_apart_otherwise() -> None:
    assert merge_spans([(50, 99), (0, 49), (120, 130), (125, 140)]) == [(0, 99), (120, 140)]
    assert merge_spans([(10, 5)]) == []  # an empty span sends nothing


def test_a_file_is_covered_only_when_every_byte_was_sent() -> None:
    assert ranges_cover([(0, 999)], 1000)
    assert ranges_cover([(500, 999), (0, 499)], 1000)  # two ranges, out of order
    assert ranges_cover([(0, 599), (400, 1500)], 1000)  # overlapping, one past the end
    assert not ranges_cover([(0, 998)], 1000)  # the last byte missing
    assert not ranges_cover([(0, 499), (501, 999)], 1000)  # one byte in the middle missing
    assert not ranges_cover([], 1000)
    assert not ranges_cover([(0, 10)], 0)  # an empty file cannot be heard


def test_bytes_covered_counts_each_byte_of_the_file_once() -> None:
    assert bytes_covered([(0, 99), (50, 149), (2000, 2999)], 1000) == 150


def test_audio_can_have_ended_only_after_its_length_less_the_slack() -> None:
    just_before = START + timedelta(seconds=3.0 - PLAYBACK_SLACK_SECONDS - 0.01)
    assert not could_have_played_to_the_end(START, 3.0, just_before)
    assert could_have_played_to_the_end(START, 3.0, START + timedelta(seconds=3.0 - PLAYBACK_SLACK_SECONDS))
    # at twice the speed, half the time
    assert could_have_played_to_the_end(START, 3.0, START + timedelta(seconds=1.5), max_speed=2.0)
