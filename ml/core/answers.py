"""What an inference answers and returns, torch-free: shared by the in-process model
(``ml.core.inference``) and an OpenAI-compatible serving endpoint (``ml.jobs.endpoint_inference``).

- ``InferenceOutput``: one answer, its raw text and its parse into spans, with the earlier replies
  its prompt held (a dialogue turn).
- ``spoken_reply``: what the user heard of an answer, the reply an "own" history feeds back.
- ``dialogue_turn_rows``: a snapshot's dialogue turns grouped into dialogues, each in turn order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ml.core.training_records import RecordAudio
from webapp.lib.output_format import ParsedOutput


def spoken_reply(parsed: ParsedOutput, raw_text: str) -> str:
    """Return what the user heard: the response span, else the whole text (free-form answers)."""
    return parsed.span_text("response").strip() or raw_text.strip()


@dataclass(frozen=True)
class InferenceOutput:
    item_id: str
    raw_text: str
    parsed: ParsedOutput
    # The earlier replies this turn's prompt held, oldest first (none for a single item).
    history_replies: tuple[str, ...] = ()

    def spoken_reply(self) -> str:
        """Return what the user heard (``spoken_reply``)."""
        return spoken_reply(self.parsed, self.raw_text)

    def span_texts(self) -> dict[str, str]:
        """Return {span name: text} for the spans found (e.g. to store on a model output row)."""
        return {name: span.text for name, span in self.parsed.spans().items()}


def dialogue_turn_rows(rows: Sequence[RecordAudio]) -> list[list[RecordAudio]]:
    """Return the dialogue turns among the records as dialogues (by dialogue id), each its turns in
    order; single items are left out."""
    by_dialogue: dict[str, list[RecordAudio]] = {}
    for row in rows:
        if row.record.dialogue_id:
            by_dialogue.setdefault(row.record.dialogue_id, []).append(row)
    return [sorted(turns, key=lambda row: row.record.turn) for _, turns in sorted(by_dialogue.items())]
