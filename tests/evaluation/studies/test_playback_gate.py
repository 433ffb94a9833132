"""The MOS playback gate (evaluation.studies.access): a reply is rated only after it was heard whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evaluation.studies.access import playback_refusal, rating_unlocked
from evaluation.studies.models import StudyAssignment, StudyStimulus
from webapp.lib.listening import PLAYBACK_SLACK_SECONDS
from webapp.listening import record_served
from webapp.models import User

SHOWN = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def _assignment(
    audio_key: str = "audio/stimulus/a.wav", seconds: float = 3.0, **fields: object
) -> StudyAssignment:
    return StudyAssignment(stimulus=StudyStimulus(audio_key=audio_key, audio_seconds=seconds), **fields)


def test_a_sample_with_audio_is_locked_until_its_playback_is_recorded() -> None:
    assert not rating_unlocked(_assignment(presented_at=SHOWN))


@pytest.mark.django_db
def test_a_recorded_playback_opens_the_sample_only_for_a_rater_who_was_sent_the_whole_audio(
    users: dict[str, User],
) -> None:
    rater = users["evaluator"]
    played = _assignment(presented_at=SHOWN, played_at=SHOWN + timedelta(seconds=3), evaluator=rater)
    assert not rating_unlocked(played)  # a "played" report alone, with no audio fetched
    record_served(rater.pk, "audio/stimulus/a.wav", 0, 999, 1000, at=SHOWN)
    assert rating_unlocked(played)


def test_a_sample_without_audio_is_open_at_once() -> None:
    assert rating_unlocked(_assignment(audio_key=""))


def test_a_playback_report_before_the_page_was_shown_is_refused() -> None:
    assert playback_refusal(_assignment(), SHOWN) == "Open the sample before playing it."


@pytest.mark.django_db
def test_a_playback_report_sooner_than_the_audio_lasts_is_refused(users: dict[str, User]) -> None:
    assignment = _assignment(presented_at=SHOWN, seconds=3.0, evaluator=users["evaluator"])
    record_served(users["evaluator"].pk, "audio/stimulus/a.wav", 0, 999, 1000, at=SHOWN)
    too_soon = SHOWN + timedelta(seconds=3.0 - PLAYBACK_SLACK_SECONDS - 0.01)

    assert playback_refusal(assignment, too_soon) is not None
    assert playback_refusal(assignment, SHOWN + timedelta(seconds=3.0 - PLAYBACK_SLACK_SECONDS)) is None
