"""Every speech model on one take, and the flags an actor reads (issue 26).

`check_take` is what the take analysis job stores under `qc["speech"]`. Thresholds come in as
`Thresholds` (Django settings fill them; see `annotation.recording.takes`). A flag never
rejects a take: it sends the take to review with a visible reason.

Every flag carries the take's estimated SNR (`conditions`), and a check below the SNR it was
measured to hold at says so as its own flag, "too_noisy", instead of a verdict (issue 39), and a
voice check on too little speech says "too_short" with the seconds heard. Trim
advice keeps vocal events (`events`): it never cuts a laugh, breath, sigh, cough or sob, and says
what it would cut.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.alignment import DOUBTFUL_RATIO, ScriptLimits, checked_script
from annotation.audio.speech.conditions import MIN_SNR_SPEAKER_DB, noise_sample, recording_conditions
from annotation.audio.speech.events import trim_advice, vocal_events
from annotation.audio.speech.loudness import loudness
from annotation.audio.speech.quality import dnsmos_scores
from annotation.audio.speech.rate import articulation_rate
from annotation.audio.speech.speaker import (
    DOUBTFUL_SIMILARITY,
    MIN_SPEECH_SECONDS,
    check_speaker,
    doubtful_below,
    similarity_to,
    speaker_embedding,
    too_short,
)

SAMPLE_RATE = 16_000
# The flags that put a take in front of its reviewers with a visible flag (and on the admins'
# dashboard): it may not say its script, or may not be its actor. The other flags are advice for
# the actor (trim, level, noise, pauses). No flag ever rejects a take.
REVIEW_FLAG_KINDS = ("script", "speaker")
# A check that cannot be trusted at the take's SNR: advice to re-record somewhere quieter.
TOO_NOISY = "too_noisy"
# A voice check on too little speech to trust its embedding: advice to record a longer take.
TOO_SHORT = "too_short"


@dataclass(frozen=True)
class Thresholds:
    doubtful_word_ratio: float = DOUBTFUL_RATIO
    doubtful_speaker_similarity: float = DOUBTFUL_SIMILARITY
    min_p808: float = 3.0  # DNSMOS P.808 below this: the take sounds noisy or distorted
    max_true_peak_dbtp: float = -0.5  # above this a converter or codec clips it
    min_lufs: float = -40.0  # quieter than this is hard to hear at a normal volume
    max_edge_silence_seconds: float = 1.5  # leading or trailing silence worth trimming
    max_pause_seconds: float = 2.0  # a pause this long inside the take
    script: ScriptLimits = field(default_factory=ScriptLimits)
    min_snr_speaker_db: float = MIN_SNR_SPEAKER_DB
    min_speaker_speech_seconds: float = MIN_SPEECH_SECONDS


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
    same_actor_references: Sequence[npt.NDArray[np.float64]] = (),
    cohort_references: Sequence[Sequence[npt.NDArray[np.float64]]] = (),
) -> dict[str, Any]:
    """Return the speech-model analysis of a 16 kHz take of `script`: figures, flags and reasons.

    `same_actor_embeddings` are the speaker embeddings of the actor's accepted takes;
    `dialogue_embeddings` those of the standing takes of the dialogue's other turns (a dialogue
    is one speaker throughout, paper B.5). `same_actor_references` are the samples of the actor's
    cleanest accepted takes: given, the voice is compared with them heard in this take's room, on
    the actor's own line (`speaker.check_speaker`), and `same_actor_embeddings` are not needed.
    `cohort_references` are other actors' cleanest accepted takes (one list per actor, nameless):
    heard in the same room, the take must sound nearer its actor than them (`speaker.cohort_score`)."""
    limits = thresholds or Thresholds()
    array = np.clip(np.asarray(samples, dtype=np.float64), -1.0, 1.0)
    speech = speech_activity(array)
    conditions = recording_conditions(array, speech.regions)
    snr = conditions.snr_db
    alignment, script_check = checked_script(array, script, snr, limits.script, limits.doubtful_word_ratio)
    activity = speech.summary()
    events = vocal_events(array, speech.regions, conditions.noise_dbfs)
    trim = trim_advice(speech.duration, speech.regions, events, limits.max_edge_silence_seconds)
    quality = dnsmos_scores(array)
    level = loudness(array, SAMPLE_RATE)
    embedding = speaker_embedding(array)
    speaker = check_speaker(
        embedding,
        same_actor_references,
        noise_sample(array, speech.regions),
        snr,
        limits.doubtful_speaker_similarity,
        cohort_references,
    )
    speaker_similarity = (
        speaker.similarity if speaker is not None else similarity_to(embedding, same_actor_embeddings)
    )
    dialogue_similarity = similarity_to(embedding, dialogue_embeddings)
    speaker_limit = doubtful_below(limits.doubtful_speaker_similarity, snr)
    actor_limit = speaker.threshold if speaker is not None else speaker_limit
    rate = articulation_rate(alignment)

    flags: list[dict[str, Any]] = []

    def flag(kind: str, reason: str) -> None:
        flags.append({"kind": kind, "reason": reason, "snr_db": snr})

    if script_check.verdict == "too_noisy":
        flag(TOO_NOISY, script_check.reason)
    elif script_check.verdict in ("doubtful", "does_not_match"):
        flag("script", script_check.reason)
    # With a cohort the actor's verdict is the cohort score's (`SpeakerCheck.doubtful`).
    compared = [
        (doubtful, against)
        for value, doubtful, against in (
            (
                speaker_similarity,
                speaker.doubtful
                if speaker is not None
                else speaker_similarity is not None and speaker_similarity < actor_limit,
                "this actor's accepted takes",
            ),
            (
                dialogue_similarity,
                dialogue_similarity is not None and dialogue_similarity < speaker_limit,
                "the other turns of this dialogue",
            ),
        )
        if value is not None
    ]
    if compared and snr is not None and snr < limits.min_snr_speaker_db:
        flag(
            TOO_NOISY,
            f"Too noisy to check the voice: the speech is {snr:.0f} dB above the noise, "
            f"the check needs {limits.min_snr_speaker_db:.0f} dB.",
        )
    elif compared and too_short(conditions.speech_seconds, limits.min_speaker_speech_seconds):
        flag(
            TOO_SHORT,
            f"Too short to check the voice: {conditions.speech_seconds:.1f} s of speech heard, "
            f"the check needs {limits.min_speaker_speech_seconds:.1f} s.",
        )
    else:
        for doubtful, against in compared:
            if doubtful:
                flag("speaker", f"The voice sounds unlike {against}.")
    if quality is not None and quality.p808 < limits.min_p808:
        flag("quality", f"The take sounds noisy or distorted (estimated quality {quality.p808:.1f} of 5).")
    if level.true_peak_dbtp > limits.max_true_peak_dbtp:
        flag("loudness", "The take peaks at full scale and may be clipped: record a little quieter.")
    if level.integrated_lufs is not None and level.integrated_lufs < limits.min_lufs:
        flag("loudness", "The take is very quiet: move closer to the microphone or raise the gain.")
    for cut in trim["cuts"]:
        flag("trim", trim_reason(cut, trim["kept_events"]))
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
                "goodness": word.goodness,
                "phones": len(word.phones),
            }
            for word in alignment.words
        ],
        "unknown_words": list(alignment.unknown_words),
        "phones_per_second": round(rate, 2) if rate else None,
        "activity": activity,
        "conditions": conditions.as_dict(),
        "vocal_events": [event.as_dict() for event in events],
        "trim": trim,
        "speaker_threshold": round(actor_limit, 3),
        "speaker_references_in_take_room": speaker.in_take_room if speaker is not None else False,
        "speaker_threshold_calibrated": speaker.calibrated if speaker is not None else False,
        # The cohort: how many other voices the take was heard against, never whose.
        "speaker_cohort_score": speaker.cohort_score if speaker is not None else None,
        "speaker_cohort_margin": speaker.cohort_margin if speaker is not None else None,
        "speaker_cohort_size": speaker.cohort_size if speaker is not None else 0,
        "dnsmos": asdict(quality) if quality else None,
        "loudness": asdict(level),
        "speaker_embedding": embedding,
        "speaker_similarity": speaker_similarity,
        "dialogue_speaker_similarity": dialogue_similarity,
        "flags": flags,
    }


def trim_reason(cut: Mapping[str, Any], kept_events: Sequence[Mapping[str, Any]]) -> str:
    """Return the sentence an actor reads for one trim cut (`events.trim_advice`): what it cuts,
    and the vocal events next to it that it keeps."""
    label = "start" if cut["edge"] == "start" else "end"
    reason = (
        f"{cut['seconds']:.1f} s of silence at the {label} could be trimmed "
        f"({cut['start']:.1f}-{cut['end']:.1f} s)."
    )
    if kept_events:
        spans = ", ".join(f"{event['start']:.1f}-{event['end']:.1f} s" for event in kept_events)
        reason += f" The vocal sounds at {spans} are kept."
    return reason
