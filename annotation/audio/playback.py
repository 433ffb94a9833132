"""When a "played to the end" report can be true: the one rule behind the review and MOS playback gates."""

from __future__ import annotations

from datetime import datetime, timedelta

# Playback is accepted this long before the audio's length has passed since it was handed out:
# the clocks of browser and server, and the decoder's idea of the length, differ by a little.
PLAYBACK_SLACK_SECONDS = 0.25


def could_have_played_to_the_end(
    shown_at: datetime, audio_seconds: float, now: datetime, *, max_speed: float = 1.0
) -> bool:
    """Return True when audio of this length, handed out at `shown_at` and played at up to
    `max_speed`, can have reached its end by `now` (less the slack); an earlier report is a
    skipped or scripted playback."""
    shortest = max(0.0, audio_seconds / max_speed - PLAYBACK_SLACK_SECONDS)
    return now >= shown_at + timedelta(seconds=shortest)
