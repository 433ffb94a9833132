"""The one rule for the assistant's reply after an earlier dialogue turn (pure: no Django); its
batched query is `annotation.dialogues.history.earlier_replies`.

Recording, labelling, the gold export, judging, inference and training all show or feed "what the
assistant said after turn k". The caller names where that reply comes from (`ReplySource`):

- "planned": the item's scripted `reference_reply` (what the actor hears while recording);
- "gold": the turn's current gold reference response, else the planned reply;
- "own": a system's own output for the turn, else the planned reply (a system that did not
  answer a turn is taken to have heard the script, as the user would have).

A blank or whitespace-only reply is no reply: it falls back to the next source the same way
everywhere, and every reply is stripped, so the gold export and training read the same text.

Gold and model outputs live in later layers (`annotation.gold`, `evaluation.outputs`): gold is
read through the item's reverse relation by name, and a system's own replies come in as data.
"""

from __future__ import annotations

from typing import Literal

ReplySource = Literal["planned", "gold", "own"]
REPLY_SOURCES: tuple[ReplySource, ...] = ("planned", "gold", "own")


def earlier_reply(
    source: ReplySource, *, planned: str, gold: str | None = None, own: str | None = None
) -> tuple[str, ReplySource | None]:
    """Return the reply after an earlier turn and where it came from (None: no reply at all).

    `gold` / `own` are None (or blank) when the turn has no gold response / no output of the system.
    """
    if source not in REPLY_SOURCES:
        raise ValueError(f"reply source must be one of {', '.join(REPLY_SOURCES)}, not {source!r}")
    candidates: list[tuple[str | None, ReplySource]] = [(planned, "planned")]
    if source == "gold":
        candidates.insert(0, (gold, "gold"))
    elif source == "own":
        candidates.insert(0, (own, "own"))
    for text, origin in candidates:
        if text is not None and text.strip():
            return text.strip(), origin
    return "", None
