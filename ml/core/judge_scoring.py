"""RL stage scores from the rubric judge: s1 (perception), s2 (reasoning), s3 (strategy) in [0, 1].

Each rollout is judged like an imported output (``evaluation.judging.runs`` does the same for stored
outputs): its perception span on the perception rubric (shift perception for emotion-shift
items), its reasoning and strategy spans together on the reasoning rubric, each against the
item's gold reference, with the app's automatic flags merged in and the hard caps applied by
``evaluation.judging.rubrics``. Then

    s1 = perception final / 10,
    s2 = mental-state sub-scores (context, latent need, core demand, constraints) / 7,
    s3 = strategy sub-score / 3,

each part with the caps of the flags about it (``rubrics.reasoning_part_score``: missing fields
for s2; a not-recommended strategy and no overlap with the recommended ones for s3). The rubric
has one reasoning stage whose total holds the strategy sub-score and the strategy caps; taking
s2 from that total would credit the strategy twice, and a wrong strategy would close gate g2,
the mis-attribution SDCA exists to avoid. An empty span scores 0 without a call. An answer that
is not valid JSON or breaks the rubric is a judge error, not a score: the rollout gets no stage
scores (None), is counted, and carries no advantage (``ml.core.sdca``), as C.3 leaves judge
errors out; a judge that cannot be reached stops the run (``JudgeUnavailable``) instead of
training on nothing.

Pure: no Django, so ``ml.cli`` can score through a judge endpoint too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluation.judging.dialogues.history import DialogueHistory
from evaluation.judging.prompts import build_messages, parse_judgement
from evaluation.judging.rubrics import (
    MENTAL_STATE_SUBSCORES,
    PERCEPTION,
    REASONING,
    SHIFT_PERCEPTION,
    STRATEGY_SUBSCORES,
    RubricError,
    StageScore,
    automatic_flags,
    reasoning_part_score,
)
from webapp.lib.llm_client import JudgeClient, JudgeReply, JudgeRequest
from webapp.lib.output_format import ParsedOutput, parse_reasoning_fields, parse_strategy_names
from webapp.lib.vocabulary import EMOTION_SHIFT

# The judge client's errors for a 200 answer that is unusable (the same list as
# evaluation.judging.runs.ANSWER_ERROR_PREFIXES, which lives in a Django module); any other error
# means the prompt got no answer at all.
_ANSWER_ERRORS = (
    "answer is not a JSON object",
    "malformed chat completion",
    "chat completion content is not text",
)


class JudgeUnavailable(RuntimeError):
    """The judge endpoint answered a prompt with no answer at all (timeout, connection, HTTP error)."""


@dataclass(frozen=True)
class JudgeGold:
    """What a rollout for one item is judged against."""

    text: str  # the words the user said
    scenario: str
    perception: dict[str, Any]
    tom: dict[str, Any]
    # A dialogue turn's conversation before it (the record's history); the judge reads it as it
    # does when judging a system's outputs. None for a single item.
    history: DialogueHistory | None = None


@dataclass
class JudgeCounts:
    prompts: int = 0
    judge_errors: int = 0  # stage answers that were unusable
    failed_rollouts: int = 0  # rollouts left without scores by one or more of them
    skipped_empty: int = 0
    last_error: str = ""


class JudgeStageScorer:
    """A ``ml.core.rl.StageJudge``: (item id, parsed rollout) -> (s1, s2, s3), None on a judge error."""

    def __init__(self, client: JudgeClient, golds: Mapping[str, JudgeGold]) -> None:
        self.client = client
        self.golds = dict(golds)
        self.counts = JudgeCounts()

    def __call__(self, item_id: str, parsed: ParsedOutput) -> tuple[float, float, float] | None:
        gold = self.golds[item_id]
        said = {"user_utterance": gold.text}
        perception_stage = SHIFT_PERCEPTION if gold.scenario == EMOTION_SHIFT else PERCEPTION
        perception_text = parsed.span_text("perception")
        shown_reasoning = "\n\n".join(
            part for part in (parsed.span_text("reasoning"), parsed.span_text("strategy")) if part
        )
        fields: dict[str, Any] = dict(parse_reasoning_fields(parsed.span_text("reasoning")))
        strategies = parse_strategy_names(parsed.span_text("strategy"))
        if strategies:
            fields["strategy"] = strategies

        prompts: dict[str, tuple[list[dict[str, Any]], set[str]]] = {}
        if perception_text:
            prompts[perception_stage] = (
                build_messages(
                    perception_stage,
                    perception_text,
                    {**said, **gold.perception},
                    gold.scenario,
                    history=gold.history,
                ),
                automatic_flags(perception_stage, perception_text, gold.tom),
            )
        if shown_reasoning:
            prompts[REASONING] = (
                build_messages(
                    REASONING, shown_reasoning, {**said, **gold.tom}, gold.scenario, history=gold.history
                ),
                automatic_flags(REASONING, fields or shown_reasoning, gold.tom),
            )
        self.counts.skipped_empty += 2 - len(prompts)
        requests = [JudgeRequest(key=stage, messages=messages) for stage, (messages, _) in prompts.items()]
        replies = dict(zip(prompts, self.client.judge_many(requests), strict=True)) if requests else {}
        self.counts.prompts += len(requests)

        errors_before = self.counts.judge_errors
        perception = self._score(perception_stage, replies.get(perception_stage), prompts, gold.scenario)
        reasoning = self._score(REASONING, replies.get(REASONING), prompts, gold.scenario)
        if self.counts.judge_errors > errors_before:
            # One unusable stage answer leaves the cascade unknown (s1 gates s2 and s3).
            self.counts.failed_rollouts += 1
            return None
        s1 = perception.final / perception.max_score if perception is not None else 0.0
        s2 = s3 = 0.0
        if reasoning is not None:
            # parse_judgement has validated these sub-scores; cap_reasons holds every flag that applied.
            subscores = (replies[REASONING].data or {})["subscores"]
            s2 = reasoning_part_score(subscores, reasoning.cap_reasons, MENTAL_STATE_SUBSCORES)
            s3 = reasoning_part_score(subscores, reasoning.cap_reasons, STRATEGY_SUBSCORES)
        return s1, s2, s3

    def _score(
        self,
        stage: str,
        reply: JudgeReply | None,
        prompts: Mapping[str, tuple[list[dict[str, Any]], set[str]]],
        scenario: str,
    ) -> StageScore | None:
        if reply is None:
            return None
        if not reply.ok and not (reply.error or "").startswith(_ANSWER_ERRORS):
            raise JudgeUnavailable(
                f"the judge at {self.client.config.base_url} gave no answer: {reply.error or 'unknown error'}"
            )
        try:
            if reply.data is None:
                raise RubricError(reply.error or "no JSON object")
            return parse_judgement(stage, reply.data, scenario, extra_flags=prompts[stage][1])
        except RubricError as exc:
            self.counts.judge_errors += 1
            self.counts.last_error = str(exc)
            return None
