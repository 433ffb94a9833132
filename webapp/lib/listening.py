"""When a person can have heard a recording to the end: the one rule behind every listening gate.

Pure (no Django). Reviews, listening studies, rubric audio scores and builder spot-checks all ask
`webapp.listening.listening_refusal`, which reads what the server sent the person and applies the
two rules below:

- every byte of the file was sent to them (`ranges_cover`: the whole-file answers and the HTTP
  ranges served, merged), so a scripted "played" report with no audio fetched is refused;
- the recording's length has passed since the first byte was sent (`could_have_played_to_the_end`),
  so fetching the file and answering at once is refused too.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

# Playback is accepted this long before the audio's length has passed since it was handed out:
# the clocks of browser and server, and the decoder's idea of the length, differ by a little.
PLAYBACK_SLACK_SECONDS = 0.25

Span = tuple[int, int]  # (first byte, last byte), inclusive, as in HTTP's Content-Range


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Return the spans merged into the fewest disjoint, sorted spans (adjacent ones joined)."""
    merged: list[Span] = []
    for start, end in sorted(span for span in spans if span[0] <= span[1]):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def bytes_covered(spans: Iterable[Span], size: int) -> int:
    """Return how many of a file's `size` bytes the spans cover (parts beyond the file ignored)."""
    clipped = ((max(0, start), min(end, size - 1)) for start, end in spans)
    return sum(end - start + 1 for start, end in merge_spans(clipped))


def ranges_cover(spans: Iterable[Span], size: int) -> bool:
    """Return True when the spans together cover every byte of a file of `size` bytes."""
    return size > 0 and bytes_covered(spans, size) == size


def could_have_played_to_the_end(
    started_at: datetime, audio_seconds: float, now: datetime, *, max_speed: float = 1.0
) -> bool:
    """Return True when audio of this length, started at `started_at` and played at up to
    `max_speed`, can have reached its end by `now` (less the slack); an earlier report is a
    skipped or scripted playback."""
    shortest = max(0.0, audio_seconds / max_speed - PLAYBACK_SLACK_SECONDS)
    return now >= started_at + timedelta(seconds=shortest)
