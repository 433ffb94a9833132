"""Fixtures of the recording-studio tests: takes made once per session, a panel of reviewers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.annotation.audio.audio_corpus import glide, harmonic_tone, valid_encodings, wav_of

if TYPE_CHECKING:
    from webapp.models import User


@pytest.fixture(scope="session")
def take_wav() -> bytes:
    """A 1.2 s voice-like tone gliding up from 150 to 220 Hz: a valid take, cheap to make."""
    return wav_of(harmonic_tone(glide(150.0, 220.0, seconds=1.2)))


@pytest.fixture(scope="session")
def take_encodings(take_wav: bytes) -> dict[str, bytes]:
    """The take in every format browsers and desktop tools produce."""
    return valid_encodings(take_wav)


@pytest.fixture
def review_panel(make_user: Callable[..., User]) -> list[User]:
    """Four reviewers, one more than a take needs, so spreading the work can be seen."""
    from webapp.roles import Role

    return [make_user(Role.REVIEWER, f"panel{n}") for n in range(1, 5)]
