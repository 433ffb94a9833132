"""The take page's speech figures name the room and the vocal sounds the check kept (issue 39)."""

from __future__ import annotations

from annotation.recording.reports import speech_rows


def test_the_rows_show_the_snr_the_too_noisy_verdict_and_the_kept_vocal_sounds() -> None:
    speech = {
        "script_check": {"verdict": "too_noisy", "doubtful_words": []},
        "conditions": {"snr_db": 2.4},
        "vocal_events": [{"start": 3.1, "end": 3.92, "character": "voiced", "above_floor_db": 14.0}],
    }

    rows = dict(speech_rows({"speech": speech}))

    assert rows["Script"] == "too noisy to check"
    assert rows["Speech above the noise (SNR)"] == "2 dB"
    assert rows["Vocal sounds outside words (never trimmed)"] == "3.1-3.9 s"


def test_a_check_from_before_issue_39_shows_dashes() -> None:
    rows = dict(speech_rows({"speech": {"script_check": {"verdict": "matches"}}}))

    assert rows["Speech above the noise (SNR)"] == "—"
    assert rows["Vocal sounds outside words (never trimmed)"] == "—"


def test_a_voice_too_short_to_check_shows_the_seconds_heard_not_a_similarity() -> None:
    speech = {
        "script_check": {"verdict": "matches"},
        "conditions": {"snr_db": 18.0, "speech_seconds": 0.74},
        "speaker_similarity": 0.61,
        "flags": [{"kind": "too_short", "reason": "Too short to check the voice: 0.7 s ...", "snr_db": 18.0}],
    }

    rows = dict(speech_rows({"speech": speech}))

    assert rows["Voice against accepted takes"] == "too short to check (0.7 s of speech)"
    assert dict(speech_rows({"speech": {**speech, "flags": []}}))["Voice against accepted takes"] == "0.61"
