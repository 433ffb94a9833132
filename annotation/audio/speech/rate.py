"""Speaking rate, one rule for every reader of it (issue 42): articulation rate from forced alignment.

Articulation rate is phones per second of speech: the script's phones over the time inside its
aligned words, so pauses between words (and silence before and after) count for nothing. The
workbench's rate draft, the take page, the waveform's word ruler, the speech check, the builder's
rate ratio and the objective metrics of response audio all read it from here.

Why not words over the first-to-last-sound span (what the workbench drafted before issue 42): a
reading with a pause in the middle measured slow though every word was said at the same speed, and
a sentence of long words measured slow against one of short words. Phones over speech time cancels
both; measured on eSpeak NG readings with and without internal pauses (tests/annotation/audio/
speech/test_rate.py): the same level within a few percent.
"""

from __future__ import annotations

import numpy.typing as npt

from annotation.audio.speech.alignment import Alignment, align
from annotation.audio.speech.resampling import at_speech_rate

# The name every stored measurement gives it (take features, speech checks, builder readings, outputs).
RATE_KEY = "phones_per_second"


def articulation_rate(alignment: Alignment) -> float | None:
    """Return phones per second of speech: the aligned words' phones over the time inside them
    (pauses between words excluded); None when nothing was aligned."""
    speaking = sum(word.end - word.start for word in alignment.words)
    phones = sum(len(word.phones) for word in alignment.words)
    return phones / speaking if speaking > 0 and phones else None


def measure_articulation_rate(samples: npt.ArrayLike, sample_rate: int, script: str) -> float | None:
    """Return the articulation rate of mono float `samples` (in [-1, 1]) that read `script`.

    Aligns without the free phone loop (`align(..., scored=False)`: timings only, the cheap path).
    None when the script is empty or the aligner places none of its words."""
    if not script.strip():
        return None
    return articulation_rate(align(at_speech_rate(samples, sample_rate), script, scored=False))
