"""Versioned LLM-judge prompts for the EchoEval rubrics, and parsing of the judge's answer.

Each stage's prompt shows the rubric of appendix C.3 (sub-scores with their ranges, hard-fail
flags), the adjudicated gold reference and the model output, and asks for exactly one JSON
object: {"subscores": {...}, "flags": [...], "rationale": "..."}. The judge only scores and
flags; the caps are applied here, by `evaluation.judging.rubrics.score_stage`, so a judge cannot
miscount them.

Bump a stage's entry in PROMPT_VERSIONS whenever its wording changes: stored judgements record
the version they were made with, and the judge cache is keyed by the exact messages, so a new
wording is judged afresh.

A dialogue turn's prompt also carries the conversation before it
(`evaluation.judging.dialogues.history`), and its judgements record the history block's version
beside the stage's. A single item's prompt is exactly what it was before dialogues existed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from evaluation.judging.dialogues.history import HISTORY_VERSION, DialogueHistory, history_lines
from evaluation.judging.rubrics import (
    MISSING_MENTAL_STATE,
    MISSING_STRATEGY,
    MODALITY_CONFLICT_FLAG,
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
    STAGES,
    SUBSCORE_RANGES,
    RubricError,
    StageScore,
    score_stage,
)
from webapp.lib.vocabulary import MODALITY_CONFLICT

PROMPT_VERSIONS: dict[str, str] = {stage: f"{stage.replace('_', '-')}-v1" for stage in STAGES}
# v2: the reasoning flags name which part is missing (mental state or strategy) since RL charges
# each to its own stage score.
PROMPT_VERSIONS[REASONING] = "reasoning-v2"

SUBSCORE_GUIDE: dict[str, dict[str, str]] = {
    PERCEPTION: {
        "polarity": "overall sentiment polarity (positive / negative / neutral / mixed) matches the "
        "reference",
        "emotion": "primary emotion category: 2 correct including the fine-grained variant, 1 right family "
        "but wrong variant, 0 wrong",
        "modality_consistency": "says correctly whether the words and the voice agree or conflict",
        "situation": "understands the user's situation and what the utterance does in context",
        "intensity": "emotion intensity matches the reference (2 exact, 1 off by one level, 0 otherwise)",
        "prosody": "prosody caption (pitch, energy, speaking rate, stressed words, intonation) is consistent "
        "with the reference",
    },
    REASONING: {
        "context": "context understanding: the functional reading of the utterance matches the reference",
        "latent_need": "the inferred psychological need beneath the words matches the reference",
        "core_demand": "identifies what the user most urgently needs from the response",
        "strategy": "chosen support strategies: 3 matches the recommended ones, 2 mostly, 1 partly, "
        "0 none or contrary",
        "constraints": "respects the interaction styles the reference says to avoid",
    },
    SHIFT_PERCEPTION: {
        "situation": "situation alignment with the reference",
        "emotion_shift": "emotion-shift correctness: the stable-versus-shift decision, the content of each "
        "segment and their order (0-6)",
        "structure": "structure quality: segments clearly delimited and described",
    },
    RESPONSE_CONTENT: {
        "content": "1-5: how well the response serves the user's core demand with recommended strategies, "
        "avoiding not-recommended strategies and the constraints; 5 fully aligned, 3 generic or "
        "superficially empathetic, 1 harmful or dismissive",
    },
    RESPONSE_AUDIO: {
        "audio": "1-5: intelligibility, vocal appropriateness for the user's emotional state, and "
        "naturalness",
    },
}

FLAG_GUIDE: dict[str, dict[str, str]] = {
    PERCEPTION: {
        "empty_or_off_topic": "the output is empty or does not describe the user's utterance",
        "wrong_primary_emotion": "the primary emotion is wrong",
        MODALITY_CONFLICT_FLAG: "the output misses that the words and the voice conflict "
        "(sarcasm, self-mockery)",
    },
    REASONING: {
        MISSING_MENTAL_STATE: "context, latent need or core demand is missing",
        MISSING_STRATEGY: "no strategy is proposed",
        "recommends_not_recommended": "a proposed strategy is one the reference marks as not recommended",
        "no_recommended_overlap": "no proposed strategy is among the reference's recommended strategies",
    },
    SHIFT_PERCEPTION: {
        "empty_or_off_task": "the output is empty or does not analyse how the emotion develops",
    },
    RESPONSE_CONTENT: {
        "harmful": "the response is harmful, dismissive or unsafe",
        "empty_response": "the response is empty",
        "hard_failure": "the response fails the task (off-topic, wrong language, or answers "
        "a different request)",
    },
    RESPONSE_AUDIO: {
        "unintelligible": "the speech cannot be understood",
        "inappropriate_voice": "the voice's emotion clearly clashes with the user's state "
        "(e.g. cheerful to grief)",
    },
}

_TASKS: dict[str, str] = {
    PERCEPTION: "Compare the model's perception of the user's spoken utterance with the expert reference "
    "annotation.",
    REASONING: "Compare the model's mental-state reasoning (context, latent need, core demand, "
    "strategy choice, constraints) with the expert Theory-of-Mind reference.",
    SHIFT_PERCEPTION: "The user's emotion may change within the utterance. Compare the model's "
    "analysis of the emotional development with the expert reference.",
    RESPONSE_CONTENT: "Judge the content of the model's response to the user against the reference anchors "
    "(core demand, recommended and not-recommended strategies, constraints).",
    RESPONSE_AUDIO: "Judge the spoken delivery of the model's response: the audio only, not what is said.",
}


def prompt_version(stage: str, *, with_history: bool = False) -> str:
    """Return the version tag of a stage's prompt, stored with every judgement (a dialogue turn's
    prompt also names the version of its history block)."""
    version = PROMPT_VERSIONS[_known(stage)]
    return f"{version}+{HISTORY_VERSION}" if with_history else version


def build_messages(
    stage: str,
    output: str | Mapping[str, Any],
    gold: Mapping[str, Any],
    scenario: str | None,
    history: DialogueHistory | None = None,
) -> list[dict[str, Any]]:
    """Return the chat messages asking the judge to score `output` against `gold` for one stage.

    `output` is the model's text for the stage, or a mapping of fields (rendered as JSON). For
    response_audio, a mapping may carry `audio_base64` and `audio_format` ("wav", "mp3"): the
    audio is then attached as an OpenAI `input_audio` part, for judges that listen. `history` is
    the conversation before a dialogue turn (None for a single item); the judge cache keys on
    the messages, so a changed earlier reply is a new prompt.
    """
    _known(stage)
    system = "\n".join(
        [
            "You are an expert evaluator of empathetic spoken dialogue, trained in psychology.",
            _TASKS[stage],
            "",
            "Score every sub-score with a whole number in its range:",
            *[
                f"- {name} ({low}-{high}): {SUBSCORE_GUIDE[stage][name]}"
                for name, (low, high) in SUBSCORE_RANGES[stage].items()
            ],
            "",
            "Raise a flag only when it clearly applies:",
            *[f"- {flag}: {text}" for flag, text in _flags_for(stage, scenario).items()],
            "",
            "Answer with exactly one JSON object and nothing else:",
            '{"subscores": {' + ", ".join(f'"{name}": <int>' for name in SUBSCORE_RANGES[stage]) + "}, "
            '"flags": [<flag>, ...], "rationale": "<one or two sentences>"}',
        ]
    )
    audio: Mapping[str, Any] | None = None
    shown_output: object = output
    if stage == RESPONSE_AUDIO and isinstance(output, Mapping) and output.get("audio_base64"):
        audio = output
        shown_output = {
            key: value for key, value in output.items() if key not in ("audio_base64", "audio_format")
        }
    user_text = "\n".join(
        [
            f"Scenario: {scenario or 'unspecified'}",
            "",
            *(history_lines(stage, history) if history is not None else []),
            "Reference annotation:",
            _as_json(gold),
            "",
            "Model output:",
            shown_output if isinstance(shown_output, str) else _as_json(shown_output),
        ]
    )
    user: dict[str, Any] = {"role": "user", "content": user_text}
    if audio is not None:
        user["content"] = [
            {"type": "text", "text": user_text},
            {
                "type": "input_audio",
                "input_audio": {"data": audio["audio_base64"], "format": audio.get("audio_format", "wav")},
            },
        ]
    return [{"role": "system", "content": system}, user]


def parse_judgement(
    stage: str, data: Mapping[str, Any], scenario: str | None, extra_flags: Iterable[str] = ()
) -> StageScore:
    """Return the capped stage score from the judge's JSON; raise RubricError when it breaks the rubric.

    `extra_flags` are flags the app decided itself (evaluation.judging.rubrics.automatic_flags); they are
    merged with the judge's so an app-detected failure is capped even if the judge missed it.
    """
    _known(stage)
    subscores = data.get("subscores")
    if not isinstance(subscores, Mapping):
        raise RubricError('judge answer has no "subscores" object')
    flags = data.get("flags", [])
    if flags is None:
        flags = []
    if not isinstance(flags, list) or not all(isinstance(flag, str) for flag in flags):
        raise RubricError('judge answer "flags" is not a list of strings')
    return score_stage(stage, subscores, [*flags, *extra_flags], scenario=scenario)


def _flags_for(stage: str, scenario: str | None) -> dict[str, str]:
    flags = dict(FLAG_GUIDE[stage])
    # Only satire / self-mockery items are capped for a missed conflict; elsewhere the flag would
    # only distract the judge.
    if stage == PERCEPTION and scenario != MODALITY_CONFLICT:
        del flags[MODALITY_CONFLICT_FLAG]
    return flags


def _known(stage: str) -> str:
    if stage not in STAGES:
        raise RubricError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
    return stage


def _as_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)
