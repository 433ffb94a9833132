"""What the reward model hears responses through: a style-aware synthesizer type, and audio coercion."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# (text, speech style) -> (samples, sample rate); e.g. ``annotation.audio.tts`` with a style control.
StyleSynthesizer = Callable[[str, str], tuple[np.ndarray, int]]


def as_float_audio(samples: np.ndarray) -> np.ndarray:
    """Return float32 samples; integer PCM is scaled into [-1, 1)."""
    array = np.asarray(samples)
    if np.issubdtype(array.dtype, np.integer):
        return (array.astype(np.float32) / float(np.iinfo(array.dtype).max + 1)).astype(np.float32)
    return array.astype(np.float32)
