"""The conversation before a dialogue turn: each earlier user turn with its take, and the reply to it.

The actor hears their own takes (the accepted one, else the latest still standing) so they perform
the next turn in context; a reviewer hears the takes the studio holds for those turns, blind: a
history turn carries audio links and the scripts, never who recorded or in what order takes came.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from annotation.recording.conversation.replies import voiced_reply
from annotation.recording.models import Item, Take
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


def take_to_play(item: Item, actor: User | None = None) -> Take | None:
    """Return the take that stands for a turn: its accepted recording, else the latest take still
    standing (never a rejected or superseded one); only `actor`'s takes when one is given."""
    takes: QuerySet[Take] = item.takes.all()
    if actor is not None:
        takes = takes.filter(actor=actor)
    accepted = takes.filter(status=Take.Status.ACCEPTED).first()
    if accepted is not None:
        return accepted
    return takes.filter(status__in=STANDING_STATUSES).order_by("-created_at", "-pk").first()


def conversation_so_far(item: Item, viewer: User, *, own_takes_only: bool) -> list[HistoryTurn]:
    """Return the turns before `item` in its dialogue (none for a single item), first turn first.

    `own_takes_only`: the viewer is the actor and hears only their own takes. Audio links are made
    for `viewer` alone (`webapp.storage.audio_url`); reply audio is synthesised on first need.
    """
    history = []
    for earlier in Item.objects.earlier_turns(item):
        take = take_to_play(earlier, viewer if own_takes_only else None)
        reply_key = voiced_reply(earlier.reference_reply)
        history.append(
            HistoryTurn(
                turn=earlier.turn or 0,
                text=earlier.text,
                scenario=earlier.get_scenario_display(),
                emotion=f"{earlier.get_target_emotion_display()}, {earlier.get_target_intensity_display().lower()}",
                audio_url=audio_url(take.audio_key, viewer) if take else "",
                # A reviewer is not told how other reviewers decided earlier turns' takes.
                take_status=take.get_status_display() if take and own_takes_only else "",
                reply=earlier.reference_reply,
                reply_audio_url=audio_url(reply_key, viewer) if reply_key else "",
            )
        )
    return history
