"""The MOS playback gate (evaluation.studies.access): a reply is rated only after it was heard whole."""

from __future__ import annotations

from datetime import datetime, timedelta

from annotation.audio.playback import PLAYBACK_SLACK_SECONDS
from evaluation.studies.access import playback_refusal, rating_unlocked
from evaluation.studies.models import StudyAssignment, StudyStimulus

SHOWN = datetime(2025, 1, 1, 12, 0, 0)


def _assignment(
    audio_key: str = "audio/stimulus/a.wav", seconds: float = 3.0, **fields: object
) -> StudyAssignment:
    return StudyAssignment(stimulus=StudyStimulus(audio_key=audio_key, audio_seconds=seconds), **fields)


def test_a_sample_with_audio_is_locked_until_its_playback_is_recorded() -> None:
    assert not rating_unlocked(_assignment(presented_at=SHOWN))
    assert rating_unlocked(_assignment(presented_at=SHOWN, played_at=SHOWN + timedelta(seconds=3)))


def test_a_sample_without_audio_is_open_at_once() -> None:
    assert rating_unlocked(_assignment(audio_key=""))


def test_a_playback_report_before_the_page_was_shown_is_refused() -> None:
    assert playback_refusal(_assignment(), SHOWN) == "Open the sample before playing it."


def test_a_playback_report_sooner_than_the_audio_lasts_is_refused() -> None:
    assignment = _assignment(presented_at=SHOWN, seconds=3.0)
    too_soon = SHOWN + timedelta(seconds=3.0 - PLAYBACK_SLACK_SECONDS - 0.01)

    assert playback_refusal(assignment, too_soon) is not None
    assert playback_refusal(assignment, SHOWN + timedelta(seconds=3.0 - PLAYBACK_SLACK_SECONDS)) is None
