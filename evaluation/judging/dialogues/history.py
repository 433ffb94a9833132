"""The conversation before a judged dialogue turn, as the judge reads it (pure: no Django).

A dialogue's user turns are items; a system answers each with its own output. When one of its
turns is judged, the judge reads what came before, turn by turn: the user's words, the reference
perception of the user (for the stages that judge understanding of the user's state, which in a
conversation is read against how it developed) and the assistant's reply. The reply is the judged
system's own output for that turn when it has one, else the turn's reference reply (the "own" source
of `webapp.lib.replies`, blank replies falling back). An output that stores the history it
was produced with (`ModelOutput.history`) is judged with exactly that history instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.judging.rubrics import PERCEPTION, REASONING, SHIFT_PERCEPTION
from webapp.lib.replies import earlier_reply

# Stored with every judgement of a dialogue turn beside the stage's own prompt version: bump it
# whenever the wording of the history block changes.
HISTORY_VERSION = "history-v1"

# The stages that judge the understanding of the user's state see how that state developed.
STAGES_WITH_EARLIER_PERCEPTION = frozenset({PERCEPTION, SHIFT_PERCEPTION, REASONING})

# The part of an earlier turn's gold perception the judge reads: enough to follow the emotional
# trajectory, without burying the judged turn under earlier prosody captions.
PERCEPTION_SUMMARY_FIELDS = ("emotion", "emotion_variant", "intensity", "polarity")

# "gold": the output was produced hearing the gold replies (else the planned ones), as it stores.
ReplySource = Literal["own", "gold", "reference", "none"]


@dataclass(frozen=True)
class EarlierTurn:
    turn: int
    user_text: str
    perception: Mapping[str, Any] | None  # the turn's gold perception; None when it has no gold yet
    reply: str
    reply_source: ReplySource  # the judged system's own reply, the reference reply, or none at all


@dataclass(frozen=True)
class DialogueHistory:
    turn: int  # the turn being judged (1-based)
    earlier: tuple[EarlierTurn, ...]


def choose_reply(own_reply: str | None, reference_reply: str) -> tuple[str, ReplySource]:
    """Return the assistant reply the judge reads for an earlier turn, and where it came from.

    `own_reply` is the judged system's response text for that turn, None (or blank) when it has no
    output there (then the reference reply stands in, or nothing when the turn has none).
    """
    reply, origin = earlier_reply("own", planned=reference_reply, own=own_reply)
    return reply, "own" if origin == "own" else "reference" if origin == "planned" else "none"


def perception_summary(perception: Mapping[str, Any] | None) -> str:
    """Return an earlier turn's gold perception as one line ("" without gold)."""
    if not perception:
        return ""
    parts = [f"{name}: {perception[name]}" for name in PERCEPTION_SUMMARY_FIELDS if perception.get(name)]
    return "; ".join(parts)


_REPLY_LABELS: dict[ReplySource, str] = {
    "own": "Assistant (the judged model's own reply)",
    "gold": "Assistant (the reply the model heard: the gold reply, else the planned one)",
    "reference": "Assistant (reference reply; the model has no output for this turn)",
    "none": "Assistant (no reply recorded)",
}


def history_lines(stage: str, history: DialogueHistory) -> list[str]:
    """Return the lines of a judge prompt that tell which turn is judged and what came before it."""
    lines = [
        f"This utterance is turn {history.turn} of a spoken dialogue. Judge only the model output for "
        f"turn {history.turn}; the earlier turns are context, not judged here.",
    ]
    if not history.earlier:
        return [*lines, ""]
    lines += ["", "Conversation so far:"]
    with_perception = stage in STAGES_WITH_EARLIER_PERCEPTION
    for earlier in history.earlier:
        lines += [f"Turn {earlier.turn}", f"User: {earlier.user_text}"]
        if with_perception:
            summary = perception_summary(earlier.perception)
            lines.append(f"Reference perception of the user: {summary or 'not annotated yet'}")
        lines.append(f"{_REPLY_LABELS[earlier.reply_source]}: {earlier.reply or '(empty)'}")
    return [*lines, ""]
