"""What does a reply say? Free speech recognition with pocketsphinx, and word error rate (WER).

The ASR is pocketsphinx's en-us acoustic model with its general English trigram (`en-us.lm.bin`,
both in the wheel; a lab's own by `paths.LANGUAGE_MODEL_ENV`). Free ASR is never a gate on takes
(`alignment`'s docstring): it measures how intelligibly a system's spoken reply says its own reply
text, so a figure compared between systems, never a pass mark. Measured on eSpeak NG
(issue 45, bench/reply_measures.py): a reply voiced with its own text 0.27 on average (0.75 at
worst of five), against another text 1.11 (0.93 at best); about 5 s of CPU per reply on a loaded
machine, so it runs in the audio job only.

WER follows the one rule in `wer`.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from annotation.audio.speech.alignment import prepared_pcm
from annotation.audio.speech.paths import (
    ACOUSTIC_MODEL_ENV,
    DICTIONARY_ENV,
    LANGUAGE_MODEL_ENV,
    model_path,
    package_dir,
)
from annotation.audio.speech.wer import word_errors, words


class _Recogniser:
    """One pocketsphinx decoder per process (loading its language model takes seconds)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._decoder: Any = None

    def transcribe(self, pcm: bytes) -> str:
        with self._lock:
            if self._decoder is None:
                from pocketsphinx import Decoder

                models = package_dir("pocketsphinx") / "model" / "en-us"
                self._decoder = Decoder(
                    hmm=str(model_path(ACOUSTIC_MODEL_ENV, models / "en-us")),
                    dict=str(model_path(DICTIONARY_ENV, models / "cmudict-en-us.dict")),
                    lm=str(model_path(LANGUAGE_MODEL_ENV, models / "en-us.lm.bin")),
                    loglevel="FATAL",
                )
            # A fresh front end: its noise estimate would otherwise carry from reply to reply.
            self._decoder.reinit_feat()
            self._decoder.start_utt()
            self._decoder.process_raw(pcm, full_utt=True)
            self._decoder.end_utt()
            hypothesis = self._decoder.hyp()
            return str(hypothesis.hypstr) if hypothesis is not None else ""


_RECOGNISER = _Recogniser()


def transcribe(samples: npt.NDArray[np.float64]) -> str:
    """Return what free ASR hears in 16 kHz mono float `samples` (empty when nothing)."""
    # The same preparation as alignment: digital silence breaks the feature normalisation.
    return _RECOGNISER.transcribe(prepared_pcm(np.asarray(samples, dtype=np.float64)))


def spoken_wer(samples: npt.NDArray[np.float64], text: str) -> float | None:
    """Return the WER of what 16 kHz `samples` say against `text` (None: `text` has no words)."""
    if not words(text):
        return None
    return round(word_errors(text, transcribe(samples)).rate, 4)
