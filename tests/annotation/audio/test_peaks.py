"""Waveform peaks (`annotation.audio.peaks`): min/max per block, as numpy finds them, at the zoom levels
a page may draw."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio.peaks import MAX_PAGE_PAIRS, block_peaks, peaks_for_page, waveform_peaks


def test_block_peaks_are_the_min_and_max_of_every_block_scaled_to_8_bits() -> None:
    rng = np.random.default_rng(46)
    samples = rng.integers(-32768, 32768, size=10_000, dtype=np.int16)  # 39 blocks of 256 and a short one

    peaks = block_peaks(samples, 256)

    blocks = [samples[i : i + 256] for i in range(0, len(samples), 256)]
    expected = [value for block in blocks for value in (int(block.min()) // 256, int(block.max()) // 256)]
    assert len(peaks) == 2 * 40
    assert peaks == expected
    assert min(peaks) >= -128 and max(peaks) <= 127


def test_a_known_signal_gives_known_peaks() -> None:
    # A square wave: 512 samples at +16384, then 512 at -16384; blocks of 1024 hold both halves.
    samples = np.concatenate([np.full(512, 16384), np.full(512, -16384)] * 3).astype(np.int16)

    assert block_peaks(samples, 1024) == [-64, 64] * 3
    assert block_peaks(samples, 512) == [64, 64, -64, -64] * 3
    assert block_peaks(np.zeros(0, dtype=np.int16), 256) == []
    with pytest.raises(ValueError):
        block_peaks(samples, 0)


def test_levels_are_kept_while_short_enough_and_the_page_gets_the_finest_that_fits() -> None:
    ten_seconds = np.zeros(160_000, dtype=np.int16)
    an_hour = np.zeros(16_000 * 3600, dtype=np.int16)

    short = waveform_peaks(ten_seconds, 16_000)
    long = waveform_peaks(an_hour, 16_000)

    assert set(short["levels"]) == {"256", "2048", "16384"} and short["length"] == 160_000
    assert set(long["levels"]) == {"16384"}  # 225,000 and 28,125 pixels are more than any screen draws
    short_page, long_page = peaks_for_page(short), peaks_for_page(long)
    assert short_page is not None and long_page is not None
    assert short_page["samples_per_pixel"] == 256 and short_page["duration"] == pytest.approx(10.0)
    assert long_page["samples_per_pixel"] == 16384 and long_page["duration"] == pytest.approx(3600.0)
    assert len(long_page["data"]) // 2 <= MAX_PAGE_PAIRS
    assert peaks_for_page(None) is None and peaks_for_page({"levels": {}}) is None
