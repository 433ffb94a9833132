"""Appendix D.1's graded ladder written by an LLM: responses of grades 0-4 from each gold reference.

The paper prompts DeepSeek for candidates across the quality spectrum; here any OpenAI-compatible
chat endpoint (``webapp.lib.llm_client``) is asked, once per user turn, for one response per
grade 0-4 as a JSON object; the gold reference response is grade 5. An answer that is not such an
object leaves that item's ladder to ``ladder.template_graded_responses`` and is counted, so a
flaky endpoint degrades the data rather than stopping the job.

Pure: no Django (the job passes a client built from the draft-LLM settings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ml.core.reward.ladder import GRADE_LADDER, RewardSourceItem
from ml.core.reward.model import MAX_CONTENT_GRADE
from webapp.lib.llm_client import JudgeClient, JudgeRequest

WRITTEN_GRADES: tuple[int, ...] = tuple(range(MAX_CONTENT_GRADE))


@dataclass
class LadderCounts:
    written: int = 0
    fell_back: int = 0
    last_error: str = ""


def ladder_messages(item: RewardSourceItem) -> list[dict[str, str]]:
    """Return the chat prompt asking for one response per grade 0-4 to one user turn."""
    grades = "\n".join(f'- "{grade}": {GRADE_LADDER[grade]}' for grade in WRITTEN_GRADES)
    strategies = ", ".join(item.strategies) or "(not given)"
    return [
        {
            "role": "system",
            "content": "You write training data for a reward model that grades empathetic spoken replies. "
            "Answer with one JSON object and nothing else.",
        },
        {
            "role": "user",
            "content": (
                f"The user said: {item.user_text or '(audio only)'}\n"
                f"Their emotion: {item.emotion}\n"
                f"Recommended support strategies: {strategies}\n"
                f"A fully aligned, high-quality empathetic reply (grade 5): {item.reference_response}\n\n"
                "Write one reply to the same user for each lower grade, one or two sentences each, "
                "as a JSON object whose keys are the grades:\n"
                f"{grades}"
            ),
        },
    ]


def parse_ladder(data: Mapping[str, Any] | None) -> dict[int, str]:
    """Return {grade: text} for grades 0-4; raise ValueError unless every grade has non-empty text."""
    if not isinstance(data, Mapping):
        raise ValueError("the answer is not a JSON object")
    ladder: dict[int, str] = {}
    for grade in WRITTEN_GRADES:
        text = data.get(str(grade))
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"grade {grade} has no text")
        ladder[grade] = " ".join(text.split())
    return ladder


def write_graded_ladders(
    client: JudgeClient, items: Sequence[RewardSourceItem]
) -> tuple[list[RewardSourceItem], LadderCounts]:
    """Return the items with ``graded_responses`` written by the endpoint, and what happened."""
    counts = LadderCounts()
    requests = [JudgeRequest(key=item.item_id, messages=ladder_messages(item)) for item in items]
    replies = client.judge_many(requests) if requests else []
    written: list[RewardSourceItem] = []
    for item, reply in zip(items, replies, strict=True):
        try:
            ladder = parse_ladder(reply.data if reply.ok else None)
        except ValueError as exc:
            counts.fell_back += 1
            counts.last_error = f"{item.item_id}: {reply.error or exc}"
            written.append(item)
            continue
        counts.written += 1
        written.append(replace(item, graded_responses={**ladder, **item.graded_responses}))
    return written, counts


def describe(counts: LadderCounts) -> str:
    """Return a one-line account for the job log."""
    text = f"graded ladder written by the LLM for {counts.written} items"
    if counts.fell_back:
        text += f"; {counts.fell_back} fell back to templates (last: {counts.last_error})"
    return text
