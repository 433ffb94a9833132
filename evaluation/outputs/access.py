"""Who may see or change systems and their outputs, and what evaluators may learn of them.

Systems, output imports and every page that names a system are for admins (`role_required` on
the views). Evaluators judge outputs blind, by hand (rubric samples) and by ear (studies): they
reach an output or a stimulus only by its random public id, and the audio links their pages get
come from the helpers below, which carry nothing that names a system (its name, anonymous code,
version or the output's row id).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.shortcuts import get_object_or_404

from annotation.recording.models import Item
from evaluation.outputs.models import System
from webapp.roles import Role
from webapp.storage import audio_url

# Who registers systems, imports outputs and reads anything that names a system (pages and API).
SYSTEM_ADMINS: tuple[Role, ...] = (Role.ADMIN,)


def system_for_admin(system_id: int) -> System:
    """Return the system an admin asked for; 404 when there is none."""
    return get_object_or_404(System, pk=system_id)


# --- Evaluator blindness --------------------------------------------------------------------------


def blind_audio_url(key: str, viewer: AbstractBaseUser | AnonymousUser) -> str:
    """Return the link an evaluator's browser gets for stored audio ("" when there is none).

    The link is short-lived, opens only for `viewer` and names the file only through a signed
    token; the files themselves are clean re-encodings stored under random keys
    (`evaluation.outputs.importing`), so neither the link nor the bytes tell whose output it is.
    """
    return audio_url(key, viewer)


def query_audio_url(item: Item, viewer: AbstractBaseUser | AnonymousUser) -> str:
    """Return the link to the item's accepted recording (the user's query), "" when it has none."""
    recording = item.recording
    return blind_audio_url(recording.audio_key, viewer) if recording is not None else ""


def systems_named_in(text: str, systems: Iterable[System]) -> list[str]:
    """Return the names of the systems whose name or anonymous code appears in text shown to raters."""
    return [
        system.name
        for system in systems
        if any(_mentions(text, label) for label in (system.name, system.anonymous_code))
    ]


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, flags=re.IGNORECASE) is not None
