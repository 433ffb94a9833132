"""Waveform peaks made once, in the take's analysis, so a page draws a take of any length at once.

The BBC audiowaveform / peaks.js approach: for every block of N samples, the block's minimum and
maximum, at a few zoom levels (N = 256, 2,048 and 16,384 samples per pixel), as 8-bit integers
(-128..127) interleaved [min0, max0, min1, max1, ...]. The page gets one level (`peaks_for_page`),
which wavesurfer draws with the take's duration, without downloading or decoding the audio.
Pure: numpy only, no Django.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

SAMPLES_PER_PIXEL = (256, 2048, 16384)
# Levels longer than this are not kept: no screen draws that many pixels of a take at once.
MAX_STORED_PAIRS = 16_000
# The finest level that fits this many pixels is the one a page carries (about 64 kB of JSON).
MAX_PAGE_PAIRS = 8_000


def block_peaks(samples: npt.NDArray[np.int16], samples_per_pixel: int) -> list[int]:
    """Return [min, max] per block of `samples_per_pixel` samples (the last block may be shorter),
    scaled from 16 bits to 8 bits and interleaved; [] for no samples."""
    if samples_per_pixel < 1:
        raise ValueError("samples_per_pixel must be at least 1")
    count = len(samples)
    if count == 0:
        return []
    blocks = -(-count // samples_per_pixel)
    padded = np.empty(blocks * samples_per_pixel, dtype=np.int16)
    padded[:count] = samples
    # The shorter last block is padded with its own last sample, which changes neither its min nor max.
    padded[count:] = samples[-1]
    shaped = padded.reshape(blocks, samples_per_pixel)
    pairs = np.empty((blocks, 2), dtype=np.int16)
    pairs[:, 0] = shaped.min(axis=1)
    pairs[:, 1] = shaped.max(axis=1)
    # Floor division by 256 maps -32768..32767 onto -128..127, the int8 range of audiowaveform.
    return [int(value) for value in (pairs.astype(np.int32) // 256).ravel()]


def waveform_peaks(samples: npt.NDArray[np.int16], sample_rate: int) -> dict[str, Any]:
    """Return the peaks of a mono 16-bit signal at every level in `SAMPLES_PER_PIXEL` that has at
    most `MAX_STORED_PAIRS` pixels (the coarsest is always kept)."""
    levels: dict[str, list[int]] = {}
    for index, per_pixel in enumerate(SAMPLES_PER_PIXEL):
        coarsest = index == len(SAMPLES_PER_PIXEL) - 1
        if -(-len(samples) // per_pixel) <= MAX_STORED_PAIRS or coarsest:
            levels[str(per_pixel)] = block_peaks(samples, per_pixel)
    return {"sample_rate": sample_rate, "length": len(samples), "bits": 8, "levels": levels}


def peaks_for_page(peaks: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return what a page's waveform draws at once: the finest stored level that fits
    `MAX_PAGE_PAIRS` pixels (else the coarsest), its samples per pixel and the take's duration.
    None when there are no peaks (the page then loads the audio as before)."""
    if not peaks or not peaks.get("levels") or not peaks.get("sample_rate"):
        return None
    levels = sorted(((int(n), data) for n, data in peaks["levels"].items()), key=lambda level: level[0])
    fitting = [level for level in levels if len(level[1]) // 2 <= MAX_PAGE_PAIRS]
    per_pixel, data = fitting[0] if fitting else levels[-1]
    return {
        "samples_per_pixel": per_pixel,
        "bits": peaks.get("bits", 8),
        "duration": peaks["length"] / peaks["sample_rate"],
        "data": data,
    }
