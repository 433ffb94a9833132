"""Objective measures of a system's response audio: no judge and no listener (issue 26).

What evaluation stores per output (`evaluation.outputs.audio_metrics`) and shows per system on the
leaderboard beside the judges' audio scores, and what study results correlate with human MOS:

- DNSMOS P.808: the overall quality P.808 listeners would give (1-5), and P.835's OVRL (1-5);
  both from `quality.dnsmos_scores`, with its one padding rule;
- integrated loudness (LUFS, BS.1770) and true peak (dBTP), at the audio's own sample rate;
- speaking rate: phones per second over speech only, the response text aligned to its audio
  (`rate.articulation_rate`, the rule every rate reader shares; None when the audio does not
  follow its text well enough to align);
- reply WER: free ASR (`recognition`) of the audio against the reply text;
- speaker similarity: the Resemblyzer embedding of the audio against that of a reference voice
  (`speaker`), the voice the system is meant to speak in (None without one).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from annotation.audio.speech.loudness import loudness
from annotation.audio.speech.quality import dnsmos_scores
from annotation.audio.speech.rate import measure_articulation_rate
from annotation.audio.speech.resampling import SAMPLE_RATE, at_speech_rate


def objective_metrics(samples: npt.ArrayLike, sample_rate: int, text: str) -> dict[str, Any]:
    """Return the objective measures of mono float `samples` (in [-1, 1]) that speak `text`."""
    array = np.asarray(samples, dtype=np.float64)
    speech = at_speech_rate(array, sample_rate)
    quality = dnsmos_scores(speech)
    level = loudness(array, sample_rate)
    rate = measure_articulation_rate(speech, SAMPLE_RATE, text)
    return {
        "p808_mos": quality.p808 if quality else None,
        "ovrl_mos": quality.overall if quality else None,
        "loudness_lufs": level.integrated_lufs,
        "true_peak_dbtp": level.true_peak_dbtp,
        "phones_per_second": round(rate, 2) if rate else None,
    }


def reply_measures(
    samples: npt.ArrayLike,
    sample_rate: int,
    text: str,
    reference: tuple[npt.ArrayLike, int] | None,
) -> dict[str, Any]:
    """Return the reply's WER against `text` and its speaker similarity to `reference` (mono float
    samples and their rate; None: no similarity) for mono float `samples` (in [-1, 1])."""
    from annotation.audio.speech.recognition import spoken_wer
    from annotation.audio.speech.speaker import similarity, speaker_embedding

    speech = at_speech_rate(np.asarray(samples, dtype=np.float64), sample_rate)
    alike = None
    if reference is not None:
        voice = at_speech_rate(np.asarray(reference[0], dtype=np.float64), reference[1])
        alike = similarity(speaker_embedding(speech), speaker_embedding(voice))
    return {"reply_wer": spoken_wer(speech, text), "speaker_similarity": alike}
