"""The conversation before a dialogue turn: each earlier user turn with its take, and the reply to it.

The actor hears their own takes (the accepted one, else the latest still standing) so they perform
the next turn in context; a reviewer hears the takes the studio holds for those turns, blind: a
history turn carries audio links and the scripts, never who recorded or in what order takes came.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from annotation.recording.conversation.replies import voiced_reply
from annotation.recording.models import Item, Take
from webapp.lib.replies import earlier_reply
from webapp.models import User
from webapp.storage import audio_url

# A take that stands for its turn until another is accepted: in review, or still being analysed.
STANDING_STATUSES = (Take.Status.ANALYSING, Take.Status.IN_REVIEW)


@dataclass(frozen=True)
class HistoryTurn:
    turn: int
    text: str  # the user's script
    scenario: str
    emotion: str  # readable target emotion and intensity
    audio_url: str  # the user's take; "" when the turn has none to play
    take_status: str  # readable ("Accepted", "In review") for the actor; "" without a take or for a reviewer
    reply: str  # the reference assistant reply that followed
    reply_audio_url: str


def _candidate_takes(item_ids: Iterable[int], actor: User | None) -> QuerySet[Take]:
    """Return the takes that may stand for the given turns, newest first."""
    takes = Take.objects.filter(
        item__in=list(item_ids), status__in=(Take.Status.ACCEPTED, *STANDING_STATUSES)
    )
    if actor is not None:
        takes = takes.filter(actor=actor)
    return takes.order_by("-created_at", "-pk")


def _standing(newest_first: Iterable[Take]) -> Take | None:
    """Return the take that stands for a turn: its newest accepted recording, else its newest take
    still standing (never a rejected or superseded one)."""
    candidates = list(newest_first)
    accepted = next((take for take in candidates if take.status == Take.Status.ACCEPTED), None)
    return accepted or next(iter(candidates), None)


def take_to_play(item: Item, actor: User | None = None) -> Take | None:
    """Return the take that stands for a turn (`_standing`); only `actor`'s takes when one is given."""
    return _standing(_candidate_takes([item.pk], actor))


def conversation_so_far(item: Item, viewer: User, *, own_takes_only: bool) -> list[HistoryTurn]:
    """Return the turns before `item` in its dialogue (none for a single item), first turn first."""
    return conversations_so_far([item], viewer, own_takes_only=own_takes_only)[item.pk]


def conversations_so_far(
    items: Sequence[Item], viewer: User, *, own_takes_only: bool
) -> dict[int, list[HistoryTurn]]:
    """Return {item pk: the turns before it}, for any number of items in three queries; only the
    turns some item needs are read and their replies voiced.

    `own_takes_only`: the viewer is the actor and hears only their own takes. Audio links are made
    for `viewer` alone (`webapp.storage.audio_url`); reply audio is synthesised on first need.
    """
    histories: dict[int, list[HistoryTurn]] = {item.pk: [] for item in items}
    # Each dialogue once, up to the latest turn asked about (two reviews may share one turn).
    earlier_turns = list(Item.objects.earlier_turns_of_all(items))
    if not earlier_turns:
        return histories
    takes_by_turn: dict[int, list[Take]] = defaultdict(list)
    for candidate in _candidate_takes(
        [turn.pk for turn in earlier_turns], viewer if own_takes_only else None
    ):
        takes_by_turn[candidate.item_id].append(candidate)
    # What the actor hears after an earlier turn: the one reply rule, planned source (stripped; a
    # blank reply is no reply), as labelling, the gold export, judging and training read it.
    replies = {turn.pk: earlier_reply("planned", planned=turn.reference_reply)[0] for turn in earlier_turns}
    reply_keys = {text: voiced_reply(text) for text in set(replies.values()) if text}
    by_dialogue: dict[int, list[HistoryTurn]] = defaultdict(list)
    for earlier in earlier_turns:
        take, reply_key = _standing(takes_by_turn[earlier.pk]), reply_keys.get(replies[earlier.pk], "")
        by_dialogue[earlier.dialogue_id or 0].append(
            HistoryTurn(
                turn=earlier.turn or 0,
                text=earlier.text,
                scenario=earlier.get_scenario_display(),
                emotion=f"{earlier.get_target_emotion_display()}, {earlier.get_target_intensity_display().lower()}",
                audio_url=audio_url(take.audio_key, viewer) if take else "",
                # A reviewer is not told how other reviewers decided earlier turns' takes.
                take_status=take.get_status_display() if take and own_takes_only else "",
                reply=replies[earlier.pk],
                reply_audio_url=audio_url(reply_key, viewer) if reply_key else "",
            )
        )
    for item in items:
        if item.dialogue_id is not None and item.turn:
            histories[item.pk] = [turn for turn in by_dialogue[item.dialogue_id] if turn.turn < item.turn]
    return histories
