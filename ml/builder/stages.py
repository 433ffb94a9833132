"""The builder's stages, in pipeline order, with their versions and the words stored for dropped samples.

One place for the names the models, the runner, the build page and the spot-check queue share.
A stage's version is written into every sample row it finishes and into the export's provenance:
changing a prompt or a threshold means bumping the version, so a record says which rules made it.
"""

from __future__ import annotations

from typing import Final

PLAN: Final = "plan"
TRAJECTORIES: Final = "trajectories"
QUERIES: Final = "queries"
QUERY_FILTER: Final = "query_filter"
USER_AUDIO: Final = "user_audio"
CONSISTENCY: Final = "consistency"
PERCEPTION: Final = "perception"
RESPONSES: Final = "responses"
RESPONSE_FILTER: Final = "response_filter"
RESPONSE_AUDIO: Final = "response_audio"

# Pipeline order. PLAN creates the samples (no per-sample rows); TRAJECTORIES plans each dialogue's
# five turns (dialogue samples only, single-turn samples pass through untouched).
STAGES: tuple[str, ...] = (
    PLAN,
    TRAJECTORIES,
    QUERIES,
    QUERY_FILTER,
    USER_AUDIO,
    CONSISTENCY,
    PERCEPTION,
    RESPONSES,
    RESPONSE_FILTER,
    RESPONSE_AUDIO,
)
SAMPLE_STAGES: tuple[str, ...] = STAGES[1:]

STAGE_TITLES: dict[str, str] = {
    PLAN: "Plan samples from the taxonomy",
    TRAJECTORIES: "Dialogue trajectories",
    QUERIES: "User queries (LLM)",
    QUERY_FILTER: "Quality and safety filter (LLM)",
    USER_AUDIO: "User audio (TTS)",
    CONSISTENCY: "Emotion consistency",
    PERCEPTION: "Automatic perception",
    RESPONSES: "Reasoning and response (LLM)",
    RESPONSE_FILTER: "Reasoning and response filter (LLM)",
    RESPONSE_AUDIO: "Response audio (TTS)",
}

STAGE_VERSIONS: dict[str, str] = {
    PLAN: "plan-1",
    TRAJECTORIES: "trajectory-1",
    QUERIES: "queries-1",
    QUERY_FILTER: "query-filter-1",
    USER_AUDIO: "user-audio-1",
    CONSISTENCY: "consistency-2",  # 2: against the same text read neutrally, rate in phones/s
    PERCEPTION: "perception-2",  # 2: rate in phones/s, stress heard, pauses, speaker consistency
    RESPONSES: "responses-1",
    RESPONSE_FILTER: "response-filter-1",
    RESPONSE_AUDIO: "response-audio-1",
}

# The stages that call an LLM (their cost is counted in tokens as well as seconds).
LLM_STAGES: frozenset[str] = frozenset({TRAJECTORIES, QUERIES, QUERY_FILTER, RESPONSES, RESPONSE_FILTER})

# The stages that synthesise or analyse audio (CPU-heavy: eSpeak NG, Praat, a local classifier).
AUDIO_STAGES: frozenset[str] = frozenset({USER_AUDIO, CONSISTENCY, PERCEPTION, RESPONSE_AUDIO})

# The paper's six prompt variants (appendix B.1).
STANDARD = "standard"
SCENARIO_RICH = "scenario-rich"
ROLE_PLAY = "role-play"
HIGH_AROUSAL = "high-arousal"
TEXT_NEUTRAL = "text-neutral"
MODALITY_CONFLICT = "modality-conflict"
PROMPT_VARIANTS: tuple[str, ...] = (
    STANDARD,
    SCENARIO_RICH,
    ROLE_PLAY,
    HIGH_AROUSAL,
    TEXT_NEUTRAL,
    MODALITY_CONFLICT,
)

# Why a sample was dropped, per stage (stored as the state row's `reason`; the detail is free text).
# The five query criteria of appendix B.1, then the harmful-content refusal.
QUERY_CRITERIA: tuple[str, ...] = (
    "empathy_interpretability",
    "non_triviality",
    "emotion_consistency",
    "coherence",
    "self_sufficiency",
)
HARMFUL_REASONS: tuple[str, ...] = ("self_harm_intent", "credible_threat", "other_harm")
RESPONSE_CRITERIA: tuple[str, ...] = (
    "structure_complete",
    "grounded_in_perception",
    "strategy_consistent",
    "style_consistent",
    "response_appropriate",
)
# Reasons any stage may give: the LLM gave no usable answer, the TTS failed, the check was unsure.
LLM_ERROR = "llm_error"
BAD_FORMAT = "bad_format"
TTS_ERROR = "tts_error"
NOT_CONFIDENT = "not_confident"
INCONSISTENT_EMOTION = "inconsistent_emotion"
DIALOGUE_BROKEN = "dialogue_turn_dropped"  # another turn of the dialogue was dropped
STAGE_ERROR = "stage_error"  # the step raised on the sample (a bug, strange audio)
# Drops the stage could not help (the row failed), as against drops for a quality reason (a low
# score, an unsure check, a bad format): a stage's failed rows in the one status vocabulary
# (`webapp.lib.row_outcome`, docs/jobs.md). A turn dropped with its dialogue because another turn
# failed so counts too (`claims.ERROR_DROPS`).
ERROR_REASONS: tuple[str, ...] = (LLM_ERROR, TTS_ERROR, STAGE_ERROR)

# Spot-check verdicts and the reasons an annotator may give (the queue lives on top of these).
SPOT_CHECK_VERDICTS: tuple[str, ...] = ("keep", "fix", "drop")
SPOT_CHECK_REASONS: tuple[str, ...] = (
    "query_unnatural",
    "query_unsafe",
    "audio_wrong_emotion",
    "audio_bad_quality",
    "perception_wrong",
    "reasoning_ungrounded",
    "strategy_wrong",
    "response_inappropriate",
    "style_mismatch",
    "other",
)


def next_stage(stage: str) -> str | None:
    """Return the stage after `stage` in pipeline order, or None after the last."""
    index = STAGES.index(stage)
    return STAGES[index + 1] if index + 1 < len(STAGES) else None


def stages_from(stage: str) -> tuple[str, ...]:
    """Return `stage` and every stage after it (what a re-run from `stage` redoes)."""
    return STAGES[STAGES.index(stage) :]
