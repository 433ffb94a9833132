"""Asking any judge configuration for rubric answers: an endpoint, the offline heuristic, or an
ensemble of them (the median of its members, `evaluation.judging.audit.ensemble_answer`).

Every endpoint call goes through the judge client, so through the outbound policy
(`JudgeConfig.client_config`) and the database judge cache. A `repeat` above 0 asks the same
prompt again as a separate cache entry (a judge at temperature > 0 answers anew; repeat 0 shares
the answer of judge runs).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.judging.audit import ensemble_answer
from evaluation.judging.cache import DatabaseJudgeCache
from evaluation.judging.dialogues.history import DialogueHistory
from evaluation.judging.heuristic import heuristic_answer
from evaluation.judging.models import JudgeConfig
from evaluation.judging.prompts import build_messages, parse_judgement
from evaluation.judging.rubrics import RubricError, automatic_flags, stage_max
from webapp.lib.llm_client import JudgeClient, JudgeReply, JudgeRequest


@dataclass(frozen=True)
class StagePrompt:
    """What a judge reads for one stage of one output (possibly a probe's changed copy)."""

    output_id: int
    stage: str
    scenario: str
    shown: str | dict[str, Any]
    flag_input: str | Mapping[str, object] | None
    gold: dict[str, Any]
    history: DialogueHistory | None = None
    probe: str = ""  # what was changed ("" for the output as it is)
    extra: Mapping[str, Any] = field(default_factory=dict)  # the probe's bookkeeping (e.g. the cap)

    def messages(self) -> list[dict[str, Any]]:
        return build_messages(self.stage, self.shown, self.gold, self.scenario, self.history)


@dataclass(frozen=True)
class StageVerdict:
    """A valid judgement of one prompt: the capped score, as a fraction of the stage's maximum too."""

    final: float
    cap: int | None
    raw_sum: float

    def fraction(self, stage: str) -> float:
        return self.final / stage_max(stage)


def judge_listens(config: JudgeConfig) -> bool:
    """Return True when the judge hears the response audio (every member, for an ensemble)."""
    members = list(config.members.all())
    if members:
        return all(judge_listens(member) for member in members)
    return config.attach_audio and not config.offline_heuristic


def verdict_of(prompt: StagePrompt, data: Mapping[str, Any] | None) -> StageVerdict | None:
    """Return the capped score of an answer (the app's own flags added), or None when it is unusable."""
    if data is None:
        return None
    try:
        score = parse_judgement(
            prompt.stage,
            data,
            prompt.scenario,
            extra_flags=automatic_flags(prompt.stage, prompt.flag_input, prompt.gold),
        )
    except RubricError:
        return None
    return StageVerdict(score.final, score.cap, score.raw_sum)


class _RepeatCache:
    """The database cache under keys of their own for repeat > 0 (repeat 0 is the judge runs' key)."""

    def __init__(self, cache: DatabaseJudgeCache, repeat: int) -> None:
        self.cache, self.repeat = cache, repeat

    def key(self, key: str) -> str:
        if not self.repeat:
            return key
        return hashlib.sha256(json.dumps([key, "repeat", self.repeat]).encode()).hexdigest()

    def get(self, key: str) -> str | None:
        return self.cache.get(self.key(key))

    def set(self, key: str, value: str) -> None:
        self.cache.set(self.key(key), value)


def ask(
    config: JudgeConfig,
    prompts: Sequence[StagePrompt],
    *,
    repeat: int = 0,
    cache: DatabaseJudgeCache | None = None,
    on_answer: Callable[[], None] | None = None,
) -> list[dict[str, Any] | None]:
    """Return each prompt's answer (None when the judge gave none usable), in prompt order.

    `on_answer` is called on this thread after each answer (progress, cancel checks).
    """
    cache = cache or DatabaseJudgeCache()
    members = list(config.members.all())
    if members:
        by_member = [
            ask(member, prompts, repeat=repeat, cache=cache, on_answer=on_answer) for member in members
        ]
        answers: list[dict[str, Any] | None] = []
        for index, prompt in enumerate(prompts):
            valid = [
                member_answers[index]
                for member_answers in by_member
                if verdict_of(prompt, member_answers[index]) is not None
            ]
            answers.append(
                ensemble_answer([answer for answer in valid if answer is not None]) if valid else None
            )
        return answers
    if config.offline_heuristic:
        computed: list[dict[str, Any] | None] = []
        for prompt in prompts:
            computed.append(heuristic_answer(prompt.stage, prompt.shown, prompt.gold))
            if on_answer is not None:
                on_answer()
        return computed
    repeat_cache = _RepeatCache(cache, repeat)
    replies: list[JudgeReply | None] = [None] * len(prompts)
    with JudgeClient(config.client_config(), repeat_cache) as client:
        requests = [
            JudgeRequest(key=index, messages=prompt.messages()) for index, prompt in enumerate(prompts)
        ]
        cache.prefetch(repeat_cache.key(client.cache_key(request.messages)) for request in requests)

        def on_result(request: JudgeRequest, reply: JudgeReply) -> None:
            cache.flush()
            replies[int(str(request.key))] = reply
            if on_answer is not None:
                on_answer()

        client.judge_many(requests, on_result)
    return [reply.data if reply is not None and reply.ok else None for reply in replies]
