"""Who may see which dialogue: recording admins every one, a voice actor only the dialogues they record.

Reviewers see a turn only through a blind review (`annotation.recording`), never a dialogue page:
a dialogue names its actor. Someone else's dialogue answers 404, so its existence stays hidden.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404

from annotation.recording.access import RECORDING_ADMINS, may_manage_recording
from annotation.recording.models import Dialogue, Item
from webapp.models import User
from webapp.roles import Role

# The roles a dialogue page or API admits at all; `dialogues_for` narrows an actor to their own.
DIALOGUE_VIEWERS: tuple[Role, ...] = (*RECORDING_ADMINS, Role.VOICE_ACTOR)


def may_manage_dialogues(user: User | AnonymousUser) -> bool:
    """Return True when the user may see every dialogue with its actor, import, export and preview."""
    return may_manage_recording(user)


def dialogues_for(user: User) -> QuerySet[Dialogue]:
    """Return the dialogues the user may see: all for an admin, those whose turns they record else."""
    if may_manage_dialogues(user):
        return Dialogue.objects.all()
    return Dialogue.objects.filter(Exists(Item.objects.filter(dialogue=OuterRef("pk"), actor=user)))


def dialogue_for_viewer(user: User, external_id: str) -> Dialogue:
    """Return the dialogue when the user may see it, else raise Http404."""
    dialogue = dialogues_for(user).filter(external_id=external_id).first()
    if dialogue is None:
        raise Http404("No such dialogue.")
    return dialogue
