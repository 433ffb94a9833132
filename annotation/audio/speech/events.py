"""Non-speech vocalisations are content: where a take laughs, breathes, sighs, coughs or sobs (issue 39).

silero-vad is trained to find words, so it counts a laugh at the end of a take, a breath before it
or a sob between phrases as silence, and trim advice built on it would cut the very sound an
expressive delivery (an EchoMind paralinguistic cue) exists for. A vocal event here is a stretch
outside the VAD's speech, at least MIN_EVENT_SECONDS long, whose energy stands EVENT_DB above the
take's noise floor (`conditions.recording_conditions`) and that moves like a voice: voiced (a
periodic pitch between 70 and 600 Hz: laughs, sobs, sighs' tails) or changing in spectrum
(spectral flux: breaths, coughs); a sound longer than STEADY_SECONDS that neither pitches nor
changes (a fan switching on, a hum) is not one. "Above the floor" counts only the frequencies
where a frame is louder than the noise is there, so a breath in a fan's quiet upper band counts;
and a breath under broadband noise, which lifts no single frequency that far, still lifts its 1 kHz
bands by a dB or two for half a second (the bands' power smoothed over 90 ms). Trim advice
(`trim_advice`) never cuts into speech or a vocal event, keeps KEEP_SECONDS around them, and says
what it would cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000
HOP = 160  # 10 ms
WINDOW = 640  # 40 ms, long enough for two periods of a 70 Hz voice
EVENT_DB = 2.5  # above the noise floor (its 50 ms average)
MIN_EVENT_SECONDS = 0.08
BRIDGE_SECONDS = 0.25  # the gaps between a laugh's bursts or a sob's breaths
STEADY_SECONDS = 1.5  # a sound longer than this must pitch or change to count as a voice
MAX_EVENT_SECONDS = 4.0  # longer than this and steady: the room changed, nobody laughed that long
VOICED = 0.45  # normalised autocorrelation peak at a 70-600 Hz lag
MOVING_FLUX = 0.25  # mean spectral flux (relative) of a breath or cough; steady noise reads ~0.1
EDGE_SECONDS = 0.06
KEEP_SECONDS = 0.35  # trim advice leaves this much around the content it keeps
BANDS = 8  # 1 kHz bands for the smoothed band reading (`_excess_db`)
BAND_SMOOTH_FRAMES = 9  # 90 ms

Character = Literal["voiced", "breathy"]


@dataclass(frozen=True)
class VocalEvent:
    start: float
    end: float
    character: Character  # voiced (laugh, sob, sigh's tail) or breathy (breath, cough)
    above_floor_db: float

    def as_dict(self) -> dict[str, Any]:
        """Return the event as JSON-ready values."""
        return {
            "start": round(self.start, 3),
            "end": round(self.end, 3),
            "character": self.character,
            "above_floor_db": round(self.above_floor_db, 1),
        }


def _frames(samples: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    count = max(0, (len(samples) - WINDOW) // HOP + 1)
    index = np.arange(WINDOW)[np.newaxis, :] + HOP * np.arange(count)[:, np.newaxis]
    return np.asarray(samples[index], dtype=np.float64)


def _voicing(frames: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return each frame's highest normalised autocorrelation at a lag of a 70-600 Hz pitch."""
    centred = frames - frames.mean(axis=1, keepdims=True)
    spectrum = np.fft.rfft(centred, n=2 * WINDOW, axis=1)
    correlation = np.fft.irfft(np.abs(spectrum) ** 2, axis=1)[:, :WINDOW]
    energy = correlation[:, :1]
    lags = correlation[:, SAMPLE_RATE // 600 : SAMPLE_RATE // 70]
    with np.errstate(invalid="ignore", divide="ignore"):
        peak = np.max(lags, axis=1) / energy[:, 0]
    return np.asarray(np.nan_to_num(peak), dtype=np.float64)


def _flux(frames: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return each frame's spectral change from the frame before, relative to their magnitude."""
    magnitude = np.abs(np.fft.rfft(frames * np.hanning(WINDOW), axis=1))
    change = np.abs(np.diff(magnitude, axis=0, prepend=magnitude[:1])).sum(axis=1)
    total = magnitude.sum(axis=1) + np.roll(magnitude.sum(axis=1), 1) + 1e-12
    return np.asarray(change / total, dtype=np.float64)


def vocal_events(
    samples: npt.NDArray[np.float64], regions: Sequence[tuple[float, float]], noise_dbfs: float
) -> tuple[VocalEvent, ...]:
    """Return the vocal events of 16 kHz `samples` outside the speech `regions` (seconds), against
    the noise floor `noise_dbfs` (`conditions.Conditions.noise_dbfs`)."""
    array = np.asarray(samples, dtype=np.float64)
    frames = _frames(array)
    if not len(frames):
        return ()
    times = (np.arange(len(frames)) * HOP + WINDOW / 2) / SAMPLE_RATE
    power_db = 10 * np.log10(np.maximum(np.mean(np.square(frames), axis=1), 1e-10))
    outside = np.ones(len(frames), dtype=bool)
    for start, end in regions:  # the VAD's edges lag the words by a window or two
        outside &= ~((times >= start - EDGE_SECONDS) & (times <= end + EDGE_SECONDS))
    excess_db = _excess_db(frames, outside, noise_dbfs)
    smooth = np.convolve(excess_db, np.ones(5) / 5, mode="same")
    loud = outside & (smooth >= EVENT_DB)
    events: list[VocalEvent] = []
    for first, last in _runs(loud, round(BRIDGE_SECONDS * SAMPLE_RATE / HOP)):
        seconds = (last - first + 1) * HOP / SAMPLE_RATE
        if seconds < MIN_EVENT_SECONDS:
            continue
        chosen = frames[first : last + 1]
        chosen_loud = loud[first : last + 1]
        voicing = float(np.percentile(_voicing(chosen[chosen_loud]), 75))
        flux = float(np.mean(_flux(chosen)[chosen_loud]))
        level_spread = float(np.std(power_db[first : last + 1]))
        moving = flux >= MOVING_FLUX or level_spread >= 3.0
        if seconds > STEADY_SECONDS and not moving and voicing < VOICED:
            continue  # a steady sound: the room, not a voice
        if seconds > MAX_EVENT_SECONDS and level_spread < 3.0:
            continue
        character: Character = "voiced" if voicing >= VOICED else "breathy"
        events.append(
            VocalEvent(
                start=max(0.0, times[first] - WINDOW / 2 / SAMPLE_RATE),
                end=min(len(array) / SAMPLE_RATE, times[last] + WINDOW / 2 / SAMPLE_RATE),
                character=character,
                above_floor_db=float(np.max(smooth[first : last + 1])),
            )
        )
    return tuple(events)


def _excess_db(
    frames: npt.NDArray[np.float64], outside: npt.NDArray[np.bool_], noise_dbfs: float
) -> npt.NDArray[np.float64]:
    """Return how far each frame stands above the noise, in dB: the larger of two readings.

    Bin by bin, counting only the frequencies where the frame is louder than twice the noise there
    (a breath in a fan's quiet upper band stands out even when it adds little to the total power).
    And band by band, smoothed over BAND_SMOOTH_FRAMES: a quiet breath under broadband noise lifts
    no single bin above twice the noise, but it lifts its 1 kHz bands by a steady dB or two for half
    a second, which the band's power over that time shows (issue 39: breaths 6 dB under 10 dB white
    or fan noise were cut by trim advice). The noise's spectrum is the median of the frames
    `outside` speech, scaled to the floor `noise_dbfs` (a flat floor when too few are outside)."""
    power = np.abs(np.fft.rfft(frames * np.hanning(WINDOW), axis=1)) ** 2
    floor = 10 ** (noise_dbfs / 10)
    if np.count_nonzero(outside) >= 10:
        shape = np.median(power[outside], axis=0) + 1e-20
    else:
        shape = np.ones(power.shape[1])
    # A median periodogram bin is 0.69 of its mean (exponentially distributed power).
    noise = np.maximum(shape / 0.69, floor * WINDOW * 0.375 / 2)
    excess = np.maximum(power - 2 * noise, 0.0).sum(axis=1) / noise.sum()
    bins_per_band = power.shape[1] // BANDS
    edges = np.arange(BANDS + 1) * bins_per_band
    band_power = np.add.reduceat(power[:, : edges[-1]], edges[:-1], axis=1)
    band_noise = np.add.reduceat(noise[: edges[-1]], edges[:-1])
    kernel = np.ones(BAND_SMOOTH_FRAMES) / BAND_SMOOTH_FRAMES
    smoothed = np.apply_along_axis(lambda band: np.convolve(band, kernel, mode="same"), 0, band_power)
    band_db = 10 * np.log10(np.maximum(np.max(smoothed / band_noise, axis=1), 1.0))
    return np.asarray(np.maximum(10 * np.log10(1.0 + excess), band_db), dtype=np.float64)


def _runs(mask: npt.NDArray[np.bool_], bridge: int) -> list[tuple[int, int]]:
    """Return (first, last) index pairs of the True runs of `mask`, gaps up to `bridge` bridged."""
    runs: list[list[int]] = []
    for index in np.flatnonzero(mask):
        if runs and index - runs[-1][1] <= bridge + 1:
            runs[-1][1] = int(index)
        else:
            runs.append([int(index), int(index)])
    return [(first, last) for first, last in runs]


def trim_advice(
    duration: float,
    regions: Sequence[tuple[float, float]],
    events: Sequence[VocalEvent],
    max_edge_seconds: float,
) -> dict[str, Any]:
    """Return what trimming would cut from a take: the silence before its first and after its
    last content (speech or vocal event), less KEEP_SECONDS, where longer than `max_edge_seconds`.

    {"content": [start, end] or None, "cuts": [{"edge", "start", "end", "seconds"}], "kept_events"}:
    the events inside what stays are listed so the advice can say what it keeps."""
    spans = [(start, end) for start, end in regions] + [(event.start, event.end) for event in events]
    if not regions:
        return {"content": None, "cuts": [], "kept_events": [event.as_dict() for event in events]}
    first, last = min(start for start, _ in spans), max(end for _, end in spans)
    cuts = []
    lead_end = max(0.0, first - KEEP_SECONDS)
    if first > max_edge_seconds and lead_end > 0:
        cuts.append({"edge": "start", "start": 0.0, "end": round(lead_end, 2), "seconds": round(lead_end, 2)})
    tail_start = min(duration, last + KEEP_SECONDS)
    if duration - last > max_edge_seconds and tail_start < duration:
        cuts.append(
            {
                "edge": "end",
                "start": round(tail_start, 2),
                "end": round(duration, 2),
                "seconds": round(duration - tail_start, 2),
            }
        )
    return {
        "content": [round(first, 3), round(last, 3)],
        "cuts": cuts,
        "kept_events": [event.as_dict() for event in events],
    }
