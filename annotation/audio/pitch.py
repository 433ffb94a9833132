"""Pitch contours that survive low voices and octave jumps: a speaker-adaptive range, then octave repair.

Praat's pitch tracker needs a floor and a ceiling. One fixed range for every speaker fails at both
ends: a low male voice (eSpeak at pitch 20 speaks around 76-86 Hz) loses a third of its voiced
frames to a 75 Hz floor, and a generous ceiling lets the tracker pick the second harmonic, so a
few frames near 500 Hz give a 33-semitone "range" and turn a fall into a fall-rise. Two passes,
as Praat users do (De Looze & Hirst 2008): a first pass over a wide range, then a second with

    floor = 0.75 x q25,   ceiling = 2.0 x q75       (quartiles of the first pass's voiced f0)

Hirst's ceiling factor is 1.5 for read speech and 2.5 for expressive speech; emotional speech sits
between, and 2.0 keeps a raised, excited peak an octave above the upper quartile.

Octave errors that stay inside the range (a halved or doubled frame) are then repaired before any
smoothing: each voiced frame is compared, in octaves, with the median of the voiced frames around
it; one more than OCTAVE_JUMP_OCTAVES away is moved by the whole number of octaves that brings it
nearest. A genuine accent moves 3-6 semitones, and a local median over a third of a second follows
a real glide, so only jumps no voice makes are moved. Intonation, range, median and every pitch
label read the repaired contour.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

FIRST_PASS_FLOOR_HZ = 50.0
FIRST_PASS_CEILING_HZ = 700.0
FLOOR_FACTOR = 0.75  # of the first pass's lower quartile
CEILING_FACTOR = 2.0  # of its upper quartile
# Lowest floor the second pass uses: Praat's window is 3 / floor long, and a voice below 40 Hz is
# creak, not pitch.
MIN_FLOOR_HZ = 40.0
# With fewer voiced frames the first pass's quartiles say little; its contour is kept.
MIN_VOICED_FRAMES_TO_ADAPT = 20

# A voiced frame this many octaves (9 semitones) from its local median is an octave error.
OCTAVE_JUMP_OCTAVES = 0.75
# The local median spans this many voiced frames (about 0.3 s at 10 ms), so a run of errors up to
# 15 frames long is outvoted by the frames around it.
OCTAVE_WINDOW_FRAMES = 31


def speaker_pitch_range(voiced_hz: FloatArray) -> tuple[float, float] | None:
    """Return (floor, ceiling) in Hz for the second pass from the first pass's voiced f0, or None
    when there are too few voiced frames to adapt."""
    voiced = voiced_hz[np.isfinite(voiced_hz) & (voiced_hz > 0)]
    if voiced.size < MIN_VOICED_FRAMES_TO_ADAPT:
        return None
    q25, q75 = (float(value) for value in np.percentile(voiced, [25, 75]))
    floor = max(MIN_FLOOR_HZ, FLOOR_FACTOR * q25)
    return floor, max(CEILING_FACTOR * q75, 2.0 * floor)


def octave_corrected(hz: FloatArray) -> FloatArray:
    """Return ``hz`` (NaN where unvoiced) with octave errors moved back to their neighbours' octave."""
    corrected = np.array(hz, dtype=np.float64)
    voiced = np.flatnonzero(np.isfinite(corrected) & (corrected > 0))
    if voiced.size < 3:
        return corrected
    octaves = np.log2(corrected[voiced])
    moved = np.zeros_like(octaves)
    # Twice: a long run of errors biases the first local medians a little; the second pass sees
    # the repaired neighbours.
    for _ in range(2):
        offset = octaves - moved - _running_median(octaves - moved, OCTAVE_WINDOW_FRAMES)
        shift = np.where(np.abs(offset) > OCTAVE_JUMP_OCTAVES, np.round(offset), 0.0)
        if not shift.any():
            break
        moved += shift
    # Frames that did not move keep their exact value.
    corrected[voiced] = corrected[voiced] / np.exp2(moved)
    return corrected


def _running_median(values: FloatArray, window: int) -> FloatArray:
    half = window // 2
    return np.array(
        [np.median(values[max(0, index - half) : index + half + 1]) for index in range(values.size)]
    )


def praat_pitch(samples: FloatArray, sample_rate: int, time_step: float) -> tuple[FloatArray, FloatArray]:
    """Return Praat's pitch contour (times, Hz with NaN unvoiced): two passes, octave-repaired."""
    import parselmouth

    sound = parselmouth.Sound(samples, sampling_frequency=sample_rate)

    def track(floor: float, ceiling: float) -> tuple[FloatArray, FloatArray]:
        pitch = sound.to_pitch_ac(time_step=time_step, pitch_floor=floor, pitch_ceiling=ceiling)
        frequency = np.asarray(pitch.selected_array["frequency"], dtype=np.float64)
        return np.asarray(pitch.xs(), dtype=np.float64), np.where(frequency > 0, frequency, np.nan)

    times, hz = track(FIRST_PASS_FLOOR_HZ, FIRST_PASS_CEILING_HZ)
    adapted = speaker_pitch_range(hz)
    if adapted is not None:
        times, hz = track(*adapted)
    return times, octave_corrected(hz)
