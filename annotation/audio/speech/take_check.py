"""Every speech model on one take, and the flags an actor reads (issue 26).

`check_take` is what the take analysis job stores under `qc["speech"]`. Thresholds come in as
`Thresholds` (Django settings fill them; see `annotation.recording.takes`). A flag never
rejects a take: it sends the take to review with a visible reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.alignment import DOUBTFUL_RATIO, align, check_script
from annotation.audio.speech.loudness import loudness
from annotation.audio.speech.quality import dnsmos_scores
from annotation.audio.speech.speaker import DOUBTFUL_SIMILARITY, similarity_to, speaker_embedding

SAMPLE_RATE = 16_000
# The flags that put a take in front of its reviewers with a visible flag (and on the admins'
# dashboard): it may not say its script, or may not be its actor. The other flags are advice for
# the actor (trim, level, noise, pauses). No flag ever rejects a take.
REVIEW_FLAG_KINDS = ("script", "speaker")


@dataclass(frozen=True)
class Thresholds:
    doubtful_word_ratio: float = DOUBTFUL_RATIO
    doubtful_speaker_similarity: float = DOUBTFUL_SIMILARITY
    min_p808: float = 3.0  # DNSMOS P.808 below this: the take sounds noisy or distorted
    max_true_peak_dbtp: float = -0.5  # above this a converter or codec clips it
    min_lufs: float = -40.0  # quieter than this is hard to hear at a normal volume
    max_edge_silence_seconds: float = 1.5  # leading or trailing silence worth trimming
    max_pause_seconds: float = 2.0  # a pause this long inside the take


def review_flags(speech: Mapping[str, Any]) -> list[dict[str, str]]:
    """Return the flags of a stored check (`check_take`'s result) that send a take to review flagged."""
    flags = speech.get("flags") if isinstance(speech, Mapping) else None
    return [
        {"kind": str(flag["kind"]), "reason": str(flag.get("reason", ""))}
        for flag in flags or []
        if isinstance(flag, Mapping) and flag.get("kind") in REVIEW_FLAG_KINDS
    ]


def check_take(
    samples: npt.NDArray[np.float64],
    script: str,
    same_actor_embeddings: Sequence[Sequence[float]] = (),
    thresholds: Thresholds | None = None,
    dialogue_embeddings: Sequence[Sequence[float]] = (),
) -> dict[str, Any]:
    """Return the speech-model analysis of a 16 kHz take of `script`: figures, flags and reasons.

    `same_actor_embeddings` are the speaker embeddings of the actor's accepted takes;
    `dialogue_embeddings` those of the standing takes of the dialogue's other turns (a dialogue
    is one speaker throughout, paper B.5)."""
    limits = thresholds or Thresholds()
    array = np.clip(np.asarray(samples, dtype=np.float64), -1.0, 1.0)
    alignment = align(array, script)
    script_check = check_script(alignment, limits.doubtful_word_ratio)
    activity = speech_activity(array).summary()
    quality = dnsmos_scores(array)
    level = loudness(array, SAMPLE_RATE)
    embedding = speaker_embedding(array)
    speaker_similarity = similarity_to(embedding, same_actor_embeddings)
    dialogue_similarity = similarity_to(embedding, dialogue_embeddings)
    rate = alignment.phones_per_second

    flags: list[dict[str, str]] = []

    def flag(kind: str, reason: str) -> None:
        flags.append({"kind": kind, "reason": reason})

    if script_check.verdict in ("doubtful", "does_not_match"):
        flag("script", script_check.reason)
    if speaker_similarity is not None and speaker_similarity < limits.doubtful_speaker_similarity:
        flag("speaker", "The voice sounds unlike this actor's accepted takes.")
    if dialogue_similarity is not None and dialogue_similarity < limits.doubtful_speaker_similarity:
        flag("speaker", "The voice sounds unlike the other turns of this dialogue.")
    if quality is not None and quality.p808 < limits.min_p808:
        flag("quality", f"The take sounds noisy or distorted (estimated quality {quality.p808:.1f} of 5).")
    if level.true_peak_dbtp > limits.max_true_peak_dbtp:
        flag("loudness", "The take peaks at full scale and may be clipped: record a little quieter.")
    if level.integrated_lufs is not None and level.integrated_lufs < limits.min_lufs:
        flag("loudness", "The take is very quiet: move closer to the microphone or raise the gain.")
    for edge, label in (("leading", "start"), ("trailing", "end")):
        seconds = activity[f"{edge}_silence_seconds"]
        if seconds > limits.max_edge_silence_seconds and activity["regions"]:
            flag("trim", f"{seconds:.1f} s of silence at the {label} could be trimmed.")
    if activity["longest_pause_seconds"] > limits.max_pause_seconds:
        flag("pause", f"A pause of {activity['longest_pause_seconds']:.1f} s inside the take.")

    return {
        "script_check": script_check.as_dict(),
        "words": [
            {
                "text": word.text,
                "start": word.start,
                "end": word.end,
                "relative_score": word.relative_score,
                "phones": len(word.phones),
            }
            for word in alignment.words
        ],
        "unknown_words": list(alignment.unknown_words),
        "phones_per_second": round(rate, 2) if rate else None,
        "activity": activity,
        "dnsmos": asdict(quality) if quality else None,
        "loudness": asdict(level),
        "speaker_embedding": embedding,
        "speaker_similarity": speaker_similarity,
        "dialogue_speaker_similarity": dialogue_similarity,
        "flags": flags,
    }
