"""The LLM stages: trajectories, queries, the query filter, reasoning and response, the response filter.

Each step takes one unit (a single sample, or a dialogue's turns in order) and returns one
``SampleResult`` per sample; it runs on a stage worker thread and writes nothing but the LLM
answer store. A step stops at a dialogue's first dropped turn; the runner then drops the rest
(``claims.drop_whole_dialogue``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ml.builder.claims import SampleResult
from ml.builder.llm import Answer, BuildLlm
from ml.builder.logic import prompts
from ml.builder.logic.filters import (
    Reasoned,
    Verdict,
    query_verdict,
    read_query,
    read_reasoned,
    response_verdict,
)
from ml.builder.logic.perception import perception_text
from ml.builder.logic.trajectory import TrajectoryProblem, planned_turn, read_trajectory
from ml.builder.models import BuildSample
from ml.builder.stages import LLM_ERROR


class LlmStepContext:
    def __init__(self, llm: BuildLlm, query_min_score: int, response_min_score: int) -> None:
        self.llm = llm
        self.query_min_score = query_min_score
        self.response_min_score = response_min_score


def _result(
    sample: BuildSample,
    answer: Answer | None,
    *,
    kept: bool = True,
    reason: str = "",
    detail: str = "",
    fields: Mapping[str, object] | None = None,
    dialogue_fields: Mapping[str, object] | None = None,
) -> SampleResult:
    """Return a sample's result carrying the cost of the answer it was made from."""
    return SampleResult(
        sample.pk,
        kept,
        reason,
        detail,
        fields=dict(fields or {}),
        dialogue_fields=dict(dialogue_fields or {}),
        llm_calls=answer.llm_calls if answer else 0,
        prompt_tokens=answer.prompt_tokens if answer else 0,
        completion_tokens=answer.completion_tokens if answer else 0,
        seconds=answer.seconds if answer else 0.0,
    )


def _failed(sample: BuildSample, answer: Answer) -> SampleResult:
    return _result(sample, answer, kept=False, reason=LLM_ERROR, detail=answer.error)


def trajectories(unit: Sequence[BuildSample], ctx: LlmStepContext) -> list[SampleResult]:
    """Plan the dialogue's turns; each turn takes its planned emotion and intensity."""
    head = unit[0]
    dialogue = head.dialogue
    assert dialogue is not None
    messages = prompts.trajectory_messages(
        dialogue.external_id,
        dialogue.topic_path,
        head.emotion,
        head.intensity,
        dialogue.prompt_variant,
        len(unit),
    )
    answer = ctx.llm.ask(messages, dialogue.external_id)
    if not answer.ok:
        return [_failed(head, answer)]
    planned = read_trajectory(answer.data, len(unit))
    if isinstance(planned, TrajectoryProblem):
        failed = _result(head, answer, kept=False, reason=planned.reason, detail=planned.detail)
        return [failed]
    trajectory = {"trajectory": [turn.to_json() for turn in planned], "trajectory_model": answer.model}
    return [
        _result(
            sample,
            answer if sample is head else None,
            fields={"emotion": turn.emotion, "intensity": turn.intensity},
            dialogue_fields=trajectory if sample is head else None,
        )
        for sample, turn in zip(unit, planned, strict=True)
    ]


def queries(unit: Sequence[BuildSample], ctx: LlmStepContext) -> list[SampleResult]:
    """Write each user query; a dialogue turn sees the earlier turns and its planned beat."""
    results: list[SampleResult] = []
    history: list[prompts.Exchange] = []
    for sample in unit:
        beat = strategy = ""
        if sample.dialogue is not None and sample.dialogue.trajectory:
            plan = planned_turn(sample.dialogue.trajectory, sample.turn)
            beat, strategy = plan.beat, plan.strategy
        messages = prompts.query_messages(
            sample.external_id,
            sample.topic_path,
            sample.emotion,
            sample.intensity,
            sample.prompt_variant,
            turn=sample.turn,
            beat=beat,
            history=history,
        )
        answer = ctx.llm.ask(messages, sample.external_id)
        if not answer.ok:
            results.append(_failed(sample, answer))
            break
        query = read_query(answer.data)
        if isinstance(query, Verdict):
            results.append(_result(sample, answer, kept=False, reason=query.reason, detail=query.detail))
            break
        models = {**sample.models_used, "queries": answer.model}
        fields = {
            "text": query.text,
            "emotion_variant": query.emotion_variant,
            "stressed_word": query.stressed_word,
            "models_used": models,
        }
        sample.text, sample.models_used = query.text, models
        results.append(_result(sample, answer, fields=fields))
        history.append(prompts.Exchange(sample.turn, query.text, planned_strategy=strategy))
    return results


def query_filter(unit: Sequence[BuildSample], ctx: LlmStepContext) -> list[SampleResult]:
    """Screen each query against the five criteria and the harmful-content refusal."""
    return _screen(
        unit,
        ctx,
        lambda sample: prompts.query_filter_messages(
            sample.text, sample.emotion, sample.intensity, sample.prompt_variant
        ),
        lambda data: query_verdict(data, ctx.query_min_score),
    )


def responses(unit: Sequence[BuildSample], ctx: LlmStepContext) -> list[SampleResult]:
    """Reason in three steps and reply; a dialogue turn sees every earlier exchange."""
    results: list[SampleResult] = []
    history: list[prompts.Exchange] = []
    for sample in unit:
        strategy = ""
        if sample.dialogue is not None and sample.dialogue.trajectory:
            strategy = planned_turn(sample.dialogue.trajectory, sample.turn).strategy
        messages = prompts.response_messages(
            sample.external_id,
            sample.text,
            perception_text(sample.perception),
            planned_strategy=strategy,
            history=history,
        )
        answer = ctx.llm.ask(messages, sample.external_id)
        if not answer.ok:
            results.append(_failed(sample, answer))
            break
        reasoned = read_reasoned(answer.data)
        if isinstance(reasoned, Verdict):
            results.append(
                _result(sample, answer, kept=False, reason=reasoned.reason, detail=reasoned.detail)
            )
            break
        results.append(_result(sample, answer, fields=_reasoned_fields(sample, reasoned, answer)))
        history.append(prompts.Exchange(sample.turn, sample.text, assistant=reasoned.response))
    return results


def _reasoned_fields(sample: BuildSample, reasoned: Reasoned, answer: Answer) -> dict[str, object]:
    return {
        "output": reasoned.output,
        "response": reasoned.response,
        "tom": reasoned.tom,
        "strategies": list(reasoned.strategies),
        "speech_style": reasoned.speech_style,
        "models_used": {**sample.models_used, "responses": answer.model},
    }


def response_filter(unit: Sequence[BuildSample], ctx: LlmStepContext) -> list[SampleResult]:
    """Check each reasoning trace and reply for structure, grounding, strategy and style."""
    return _screen(
        unit,
        ctx,
        lambda sample: prompts.response_filter_messages(
            sample.text, perception_text(sample.perception), sample.output
        ),
        lambda data: response_verdict(data, ctx.response_min_score),
    )


def _screen(
    unit: Sequence[BuildSample],
    ctx: LlmStepContext,
    messages_for: Callable[[BuildSample], prompts.Messages],
    verdict_on: Callable[[Mapping[str, Any]], Verdict],
) -> list[SampleResult]:
    """Ask the filter LLM about each sample of a unit in turn. The first failure or drop ends the
    unit: a dialogue whose turn is dropped is dropped whole, so its later turns are not paid for."""
    results: list[SampleResult] = []
    for sample in unit:
        answer = ctx.llm.ask(messages_for(sample), sample.external_id)
        if not answer.ok:
            results.append(_failed(sample, answer))
            break
        verdict = verdict_on(answer.data)
        results.append(
            _result(sample, answer, kept=verdict.kept, reason=verdict.reason, detail=verdict.detail)
        )
        if not verdict.kept:
            break
    return results
