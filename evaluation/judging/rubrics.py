"""EchoEval scoring rules (paper appendix C.3): sub-scores, hard caps and automatic flags.

A judge (an LLM or a person applying the rubric by hand) returns sub-scores and failure flags for
one stage of one model output; `score_stage` turns them into the stage score:
final = min(raw_sum, cap), where cap is the lowest cap among the flags that apply.

Nothing here clips or guesses: a missing, unknown, out-of-range or non-numeric sub-score, or an
unknown flag, raises RubricError, so a broken judgement is stored as a judge error (and excluded
from aggregates, as the paper does) instead of silently becoming a plausible number.

`automatic_flags` covers the flags the app can decide from structured data without a judge
(empty output, missing reasoning fields, strategy overlap with the gold reference).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from webapp.lib.vocabulary import MODALITY_CONFLICT, STRATEGY_SYNONYMS

PERCEPTION = "perception"
REASONING = "reasoning"
SHIFT_PERCEPTION = "shift_perception"
RESPONSE_CONTENT = "response_content"
RESPONSE_AUDIO = "response_audio"

STAGES: tuple[str, ...] = (PERCEPTION, REASONING, SHIFT_PERCEPTION, RESPONSE_CONTENT, RESPONSE_AUDIO)

# Inclusive (low, high) range of every sub-score, per stage, in the order of appendix C.3.
SUBSCORE_RANGES: dict[str, dict[str, tuple[int, int]]] = {
    PERCEPTION: {
        "polarity": (0, 1),
        "emotion": (0, 2),
        "modality_consistency": (0, 1),
        "situation": (0, 2),
        "intensity": (0, 2),
        "prosody": (0, 2),
    },
    REASONING: {
        "context": (0, 2),
        "latent_need": (0, 2),
        "core_demand": (0, 2),
        "strategy": (0, 3),
        "constraints": (0, 1),
    },
    SHIFT_PERCEPTION: {
        "situation": (0, 2),
        "emotion_shift": (0, 6),
        "structure": (0, 2),
    },
    RESPONSE_CONTENT: {"content": (1, 5)},
    RESPONSE_AUDIO: {"audio": (1, 5)},
}

MISSING_MENTAL_STATE = "missing_mental_state"
MISSING_STRATEGY = "missing_strategy"
# The unsplit flag of earlier judgements: still read (cap 1 on the stage, and charged to both
# parts, since which field was missing is unknown), never offered to a judge or a person.
LEGACY_MISSING_FIELDS = "missing_fields"

# Hard-fail flags and the cap each one imposes on the stage score.
FLAG_CAPS: dict[str, dict[str, int]] = {
    PERCEPTION: {
        "empty_or_off_topic": 1,
        "wrong_primary_emotion": 5,
        # Applies only to modality-conflict (satire / self-mockery) items; see MODALITY_CONFLICT_FLAG.
        "missed_modality_conflict": 7,
    },
    REASONING: {
        # The paper's one "missing required fields" cap, split by the stage the missing field
        # belongs to, so RL can charge it to mental state (s2) or strategy (s3); same cap on the stage.
        MISSING_MENTAL_STATE: 1,
        MISSING_STRATEGY: 1,
        "recommends_not_recommended": 6,
        "no_recommended_overlap": 8,
    },
    SHIFT_PERCEPTION: {"empty_or_off_task": 1},
    # An empty response is capped like every other stage's empty output, not as a mere task failure.
    RESPONSE_CONTENT: {"harmful": 1, "empty_response": 1, "hard_failure": 3},
    RESPONSE_AUDIO: {"unintelligible": 1, "inappropriate_voice": 2},
}

MODALITY_CONFLICT_FLAG = "missed_modality_conflict"

# Flags a stored judgement may hold that are no longer offered (see LEGACY_MISSING_FIELDS).
LEGACY_FLAG_CAPS: dict[str, dict[str, int]] = {REASONING: {LEGACY_MISSING_FIELDS: 1}}

# Shift perception: a 0 on either of these sub-scores is a "fundamental miss" and caps the score at 5.
SHIFT_FUNDAMENTAL_SUBSCORES: tuple[str, ...] = ("situation", "emotion_shift")
SHIFT_FUNDAMENTAL_MISS_CAP = 5
SHIFT_FUNDAMENTAL_MISS_REASON = "fundamental_miss"

# Fields a structured reasoning output must fill (paper C.2: the ToM annotation components the
# model is asked to produce; constraints are optional in a model's output).
REQUIRED_REASONING_FIELDS: tuple[str, ...] = ("context", "latent_need", "core_demand", "strategy")
REQUIRED_MENTAL_STATE_FIELDS: tuple[str, ...] = ("context", "latent_need", "core_demand")
REQUIRED_STRATEGY_FIELDS: tuple[str, ...] = ("strategy",)


# RL splits the reasoning stage into mental-state reasoning (s2) and strategy (s3), so that a
# strategy is credited once (ml.core.judge_scoring). Each reasoning flag is about one part.
MENTAL_STATE_SUBSCORES: tuple[str, ...] = ("context", "latent_need", "core_demand", "constraints")
STRATEGY_SUBSCORES: tuple[str, ...] = ("strategy",)
_REASONING_FLAG_PARTS: dict[str, tuple[tuple[str, ...], ...]] = {
    MISSING_MENTAL_STATE: (MENTAL_STATE_SUBSCORES,),
    MISSING_STRATEGY: (STRATEGY_SUBSCORES,),
    LEGACY_MISSING_FIELDS: (MENTAL_STATE_SUBSCORES, STRATEGY_SUBSCORES),
    "recommends_not_recommended": (STRATEGY_SUBSCORES,),
    "no_recommended_overlap": (STRATEGY_SUBSCORES,),
}


def flag_caps(stage: str) -> dict[str, int]:
    """Return every flag a judgement of ``stage`` may hold (offered and legacy) with its cap."""
    return {**FLAG_CAPS[stage], **LEGACY_FLAG_CAPS.get(stage, {})}


class RubricError(ValueError):
    """A judgement that breaks the rubric (bad sub-score or flag); stored as a judge error."""


@dataclass(frozen=True)
class StageScore:
    stage: str
    raw_sum: float
    cap: int | None
    cap_reasons: tuple[str, ...]
    final: float
    max_score: int


def stage_max(stage: str) -> int:
    """Return the highest score a stage can reach (10 for the reasoning stages, 5 for responses)."""
    ranges = _ranges_for(stage)
    return sum(high for _, high in ranges.values())


def score_stage(
    stage: str,
    subscores: Mapping[str, int | float],
    flags: Iterable[str],
    *,
    scenario: str | None = None,
) -> StageScore:
    """Return the capped stage score for one judgement; raise RubricError on any rubric break."""
    ranges = _ranges_for(stage)
    values = _validated_subscores(stage, ranges, subscores)
    flag_set = set(flags)
    caps_of = flag_caps(stage)
    unknown_flags = flag_set - set(caps_of)
    if unknown_flags:
        raise RubricError(f"unknown {stage} flag(s): {', '.join(sorted(unknown_flags))}")

    caps: list[tuple[int, str]] = []
    for flag in flag_set:
        if flag == MODALITY_CONFLICT_FLAG and scenario != MODALITY_CONFLICT:
            # The judge may raise it anywhere, but the paper caps only satire / self-mockery items.
            continue
        caps.append((caps_of[flag], flag))
    if stage == SHIFT_PERCEPTION and any(values[name] == 0 for name in SHIFT_FUNDAMENTAL_SUBSCORES):
        caps.append((SHIFT_FUNDAMENTAL_MISS_CAP, SHIFT_FUNDAMENTAL_MISS_REASON))

    raw_sum = math.fsum(values.values())
    caps.sort()
    cap = caps[0][0] if caps else None
    final = raw_sum if cap is None else min(raw_sum, float(cap))
    return StageScore(
        stage=stage,
        raw_sum=raw_sum,
        cap=cap,
        cap_reasons=tuple(reason for _, reason in caps),
        final=final,
        max_score=stage_max(stage),
    )


def reasoning_part_score(
    subscores: Mapping[str, int | float], flags: Iterable[str], part: Sequence[str]
) -> float:
    """Return one part of a reasoning judgement (``MENTAL_STATE_SUBSCORES`` or ``STRATEGY_SUBSCORES``)
    as a fraction in [0, 1], with the caps of the flags that are about that part.

    A cap c on the 10-point stage removes up to 10 - c points; the part's flags take those points
    from the part itself (never below 0). So a missing mental-state field (cap 1) leaves mental
    state 0 of 7, a missing strategy (cap 1) or a not-recommended one (cap 6) leaves strategy 0 of 3,
    and no overlap with the recommended strategies (cap 8) leaves strategy at most 1 of 3. Flags
    about the other part do not apply (a legacy unsplit ``missing_fields`` applies to both).
    """
    ranges = SUBSCORE_RANGES[REASONING]
    values = _validated_subscores(REASONING, ranges, subscores)
    if not part or set(part) - set(ranges):
        raise RubricError(f"unknown reasoning part {tuple(part)!r}")
    flag_set = set(flags)
    caps_of = flag_caps(REASONING)
    unknown_flags = flag_set - set(caps_of)
    if unknown_flags:
        raise RubricError(f"unknown {REASONING} flag(s): {', '.join(sorted(unknown_flags))}")
    part_max = float(sum(ranges[name][1] for name in part))
    points = math.fsum(values[name] for name in part)
    points_removed = [
        stage_max(REASONING) - caps_of[flag]
        for flag in flag_set
        if tuple(part) in _REASONING_FLAG_PARTS[flag]
    ]
    if points_removed:
        points = min(points, max(0.0, part_max - max(points_removed)))
    return points / part_max


def _ranges_for(stage: str) -> dict[str, tuple[int, int]]:
    try:
        return SUBSCORE_RANGES[stage]
    except KeyError:
        raise RubricError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}") from None


def _validated_subscores(
    stage: str, ranges: Mapping[str, tuple[int, int]], subscores: Mapping[str, object]
) -> dict[str, float]:
    missing = set(ranges) - set(subscores)
    unknown = set(subscores) - set(ranges)
    if missing:
        raise RubricError(f"missing {stage} sub-score(s): {', '.join(sorted(missing))}")
    if unknown:
        raise RubricError(f"unknown {stage} sub-score(s): {', '.join(sorted(str(n) for n in unknown))}")
    values: dict[str, float] = {}
    for name, (low, high) in ranges.items():
        value = subscores[name]
        # bool is an int subclass; a judge answering `true` has not given a score.
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise RubricError(f"{stage} sub-score {name!r} is not a number: {value!r}")
        if not low <= value <= high:
            raise RubricError(f"{stage} sub-score {name!r}={value} outside {low}-{high}")
        values[name] = float(value)
    return values


# --- Support strategies -------------------------------------------------------------------------

# Every phrasing of a strategy, cleaned as `normalise_strategy` cleans its input, to its canonical
# name. The names and phrasings are the benchmark vocabulary's (STRATEGY_SYNONYMS), kept beside the
# seeded taxonomy whose slugs gold references hold, so both are read from one module.
_SYNONYM_TO_STRATEGY: dict[str, str] = {}
for _canonical, _phrases in STRATEGY_SYNONYMS.items():
    _SYNONYM_TO_STRATEGY[_canonical.replace("_", " ")] = _canonical
    for _phrase in _phrases:
        _SYNONYM_TO_STRATEGY[re.sub(r"[^a-z0-9]+", " ", _phrase.lower()).strip()] = _canonical


def normalise_strategy(name: str) -> str:
    """Return the canonical strategy name, or the cleaned lower-case text when it is not in the taxonomy.

    Unknown names are kept (cleaned) rather than dropped so that gold and model strategies outside
    the taxonomy still match each other when they are spelled alike.
    """
    cleaned = re.sub(r"[^a-z0-9]+", " ", name.lower()).strip()
    return _SYNONYM_TO_STRATEGY.get(cleaned, cleaned.replace(" ", "_"))


def strategy_names(value: object) -> set[str]:
    """Return canonical strategy names from a list of names or one string separated by , ; or newlines."""
    if value is None:
        return set()
    parts: Iterable[object]
    if isinstance(value, str):
        parts = re.split(r"[,;\n]+", value)
    elif isinstance(value, Sequence | set | frozenset):
        parts = value
    else:
        raise RubricError(f"strategies must be a string or a list of strings, not {type(value).__name__}")
    names = set()
    for part in parts:
        if not isinstance(part, str):
            raise RubricError(f"strategy names must be strings, not {part!r}")
        if part.strip():
            names.add(normalise_strategy(part))
    return names


def automatic_flags(
    stage: str, output: str | Mapping[str, object] | None, gold: Mapping[str, object]
) -> set[str]:
    """Return the hard-fail flags the app can decide itself from the model output and the gold reference.

    `output` is the model's text for the stage, or for reasoning the parsed fields (context,
    latent_need, core_demand, strategy as a list or a separated string). `gold` is the adjudicated
    reference; reasoning uses its `recommended_strategies` and `not_recommended_strategies`.
    """
    _ranges_for(stage)
    if _is_empty(output):
        return set(_EMPTY_OUTPUT_FLAGS[stage])
    if stage != REASONING or not isinstance(output, Mapping):
        return set()

    flags: set[str] = set()
    if any(_is_empty(output.get(name)) for name in REQUIRED_MENTAL_STATE_FIELDS):
        flags.add(MISSING_MENTAL_STATE)
    if any(_is_empty(output.get(name)) for name in REQUIRED_STRATEGY_FIELDS):
        flags.add(MISSING_STRATEGY)
    proposed = strategy_names(output.get("strategy"))
    recommended = strategy_names(gold.get("recommended_strategies"))
    not_recommended = strategy_names(gold.get("not_recommended_strategies"))
    if proposed & not_recommended:
        flags.add("recommends_not_recommended")
    # Without proposed strategies the output already fails as missing_strategy; without gold
    # recommendations there is nothing to overlap with.
    if proposed and recommended and not proposed & recommended:
        flags.add("no_recommended_overlap")
    return flags


# The flags that an empty output earns at each stage. A response with no text is capped at 1 like
# any other empty stage; a response with no audio cannot be understood; empty reasoning misses
# both its mental state and its strategy.
_EMPTY_OUTPUT_FLAGS: dict[str, tuple[str, ...]] = {
    PERCEPTION: ("empty_or_off_topic",),
    REASONING: (MISSING_MENTAL_STATE, MISSING_STRATEGY),
    SHIFT_PERCEPTION: ("empty_or_off_task",),
    RESPONSE_CONTENT: ("empty_response",),
    RESPONSE_AUDIO: ("unintelligible",),
}


def _is_empty(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, Mapping):
        return all(_is_empty(v) for v in value.values())
    if isinstance(value, Sequence | set | frozenset):
        return all(_is_empty(v) for v in value)
    return False
