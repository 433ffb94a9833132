"""What a crowd platform puts on the link a rater arrives by, and where it wants them sent back.

Pure: plain query parameters in, an `Entry` (who the rater is on the platform) or a clear
`EntryProblem` out. Prolific appends `PROLIFIC_PID`, `STUDY_ID` and `SESSION_ID` to a study's URL;
Mechanical Turk's external question appends `workerId`, `assignmentId`, `hitId` (and
`turkSubmitTo`), with `assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE` while a worker only previews the
HIT; a generic link carries one signed per-rater `token` (checked by the caller's `verify_token`).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote


class Platform(enum.StrEnum):
    PROLIFIC = "prolific"
    MTURK = "mturk"
    GENERIC = "generic"


MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
# Prolific's documented return link; `{code}` becomes the study's completion (or screened-out) code.
PROLIFIC_RETURN_URL = "https://app.prolific.com/submissions/complete?cc={code}"
# Platform ids are short opaque strings; anything else in them is a broken or forged link.
_PLATFORM_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")


class EntryProblem(ValueError):
    """The link lacks or garbles the platform's parameters; the message is for the person holding it."""


@dataclass(frozen=True)
class Entry:
    """One rater as their platform names them: `external_id` is the one participation key."""

    external_id: str
    platform_study: str = ""
    platform_session: str = ""


@dataclass(frozen=True)
class Preview:
    """A Mechanical Turk worker previewing the HIT: shown what the task is, never enrolled."""


# The parameters each platform's link carries: (participant, study, session).
PARAMETERS: dict[Platform, tuple[str, str, str]] = {
    Platform.PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    Platform.MTURK: ("workerId", "hitId", "assignmentId"),
    Platform.GENERIC: ("token", "", ""),
}


def has_entry_parameters(platform: Platform, params: Mapping[str, str]) -> bool:
    """Return True when the query names a participant at all (else the caller may resume a session)."""
    return any(name and name in params for name in PARAMETERS[platform])


def read_entry(
    platform: Platform, params: Mapping[str, str], verify_token: Callable[[str], str | None]
) -> Entry | Preview:
    """Return who arrives by this link, a `Preview` for an MTurk preview, or raise `EntryProblem`."""
    participant, study, session = PARAMETERS[platform]
    if platform == Platform.MTURK and params.get("assignmentId") == MTURK_PREVIEW:
        return Preview()
    if platform == Platform.GENERIC:
        rater = verify_token(params.get("token", "").strip())
        if rater is None:
            raise EntryProblem(
                "This personal link is incomplete or was changed. Open it again exactly as you received it."
            )
        return Entry(external_id=rater)
    values = {name: params.get(name, "").strip() for name in (participant, study, session)}
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise EntryProblem(
            f"The link is missing {', '.join(missing)}. Open the study from {_platform_name(platform)} "
            "again rather than copying its address."
        )
    garbled = [name for name, value in values.items() if not _PLATFORM_ID.match(value)]
    if garbled:
        raise EntryProblem(
            f"The link's {', '.join(garbled)} is not valid. Open the study from "
            f"{_platform_name(platform)} again."
        )
    return Entry(values[participant], values[study], values[session])


def return_url(platform: Platform, template: str, code: str) -> str:
    """Return where to send a rater back with `code`: the study's own template, else the platform's
    ("" when the platform has none: MTurk survey HITs and generic links show the code to copy)."""
    chosen = template or (PROLIFIC_RETURN_URL if platform == Platform.PROLIFIC else "")
    return chosen.replace("{code}", quote(code, safe=""))


def _platform_name(platform: Platform) -> str:
    return {Platform.PROLIFIC: "Prolific", Platform.MTURK: "Mechanical Turk"}.get(platform, "the invitation")
