"""Spot-check rules: which stage a reason blames, acceptance per stage, what a tightened filter redoes.

Pure (no Django): plain values in, plain values out, so the build page, the queue and the
re-run agree on one reading.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ml.builder.stages import (
    CONSISTENCY,
    PERCEPTION,
    QUERY_FILTER,
    RESPONSE_AUDIO,
    RESPONSE_FILTER,
    SAMPLE_STAGES,
    SPOT_CHECK_REASONS,
    TRAJECTORIES,
    USER_AUDIO,
)
from webapp.lib.stats import Proportion, wilson_interval

KEEP, FIX, DROP = "keep", "fix", "drop"
OTHER = "other"

# The stage that let each kind of problem through. Where a filter exists for the problem, the
# filter is blamed, not the stage that made the text: it is the filter a lab can tighten.
# "Emotion not audible" is the consistency check's miss; an ungrounded or wrongly chosen
# strategy, an inappropriate response and a style that does not fit are what the reasoning and
# response filter checks (its five criteria); audio that does not sound like the chosen style
# is the response voicing's fault. "other" names no stage: the annotator chooses one.
REASON_STAGES: dict[str, str] = {
    "query_unnatural": QUERY_FILTER,
    "query_unsafe": QUERY_FILTER,
    "audio_wrong_emotion": CONSISTENCY,
    "audio_bad_quality": USER_AUDIO,
    "perception_wrong": PERCEPTION,
    "reasoning_ungrounded": RESPONSE_FILTER,
    "strategy_wrong": RESPONSE_FILTER,
    "response_inappropriate": RESPONSE_FILTER,
    "style_mismatch": RESPONSE_AUDIO,
}
assert set(REASON_STAGES) | {OTHER} == set(SPOT_CHECK_REASONS), "every reason blames a stage"

REASON_TITLES: dict[str, str] = {
    "query_unnatural": "The query is unnatural or trivial",
    "query_unsafe": "The query is unsafe or harmful",
    "audio_wrong_emotion": "The emotion is not audible in the user audio",
    "audio_bad_quality": "The user audio is broken or unintelligible",
    "perception_wrong": "The automatic perception labels are wrong",
    "reasoning_ungrounded": "The reasoning is not grounded in the perception",
    "strategy_wrong": "The strategy does not fit",
    "response_inappropriate": "The response is inappropriate or unhelpful",
    "style_mismatch": "The response audio does not match the speech style",
    OTHER: "Other (say which stage)",
}


class DecisionProblem(ValueError):
    """A spot-check decision that cannot be stored, with the reason in words."""


def blamed_stage(verdict: str, reasons: Sequence[str], chosen_stage: str = "") -> str:
    """Return the stage a fix or drop is attributed to ("" for keep); raise DecisionProblem.

    The annotator's explicit choice wins; otherwise the earliest stage any reason blames, since
    the first stage to let a problem through is the one whose filter failed.
    """
    unknown = [reason for reason in reasons if reason not in REASON_TITLES]
    if unknown:
        raise DecisionProblem(f"unknown reason(s): {', '.join(unknown)}")
    if chosen_stage and chosen_stage not in SAMPLE_STAGES:
        raise DecisionProblem(f"{chosen_stage!r} is not a stage of the pipeline")
    if verdict == KEEP:
        if reasons or chosen_stage:
            raise DecisionProblem("a kept sample needs no reasons")
        return ""
    if verdict not in (FIX, DROP):
        raise DecisionProblem(f"the verdict is keep, fix or drop, not {verdict!r}")
    if not reasons:
        raise DecisionProblem("give at least one reason for a fix or a drop")
    if chosen_stage:
        return chosen_stage
    blamed = [REASON_STAGES[reason] for reason in reasons if reason in REASON_STAGES]
    if not blamed:
        raise DecisionProblem("say which stage let the problem through (the reason names none)")
    return min(blamed, key=SAMPLE_STAGES.index)


# What a drop of one dialogue turn does to the rest of its dialogue: the later turns heard the
# dropped one, so they cannot stay without it. Either the dialogue is cut there (the turns
# before it stay, a shorter dialogue) or the whole dialogue goes.
CUT, WHOLE_DIALOGUE = "cut", "dialogue"
REST_TITLES: dict[str, str] = {
    CUT: "Cut the dialogue here: keep the turns before this one, leave out this one and every later turn",
    WHOLE_DIALOGUE: "Drop the whole dialogue, every turn of it",
}
# BuildSample.drop_reason of the turns a spot-check's drop removed besides the dropped turn itself.
CUT_AWAY = "spot_check_cut"
DIALOGUE_DROPPED = "spot_check_dialogue_drop"


def removed_turns(turns: Iterable[int], drops: Mapping[int, str], dropped_reason: str) -> dict[int, str]:
    """Return {turn: drop reason} for every turn of a dialogue its spot-check drops remove.

    `drops` maps each dropped turn to what its checker chose for the rest (CUT or WHOLE_DIALOGUE).
    A dropped turn gets `dropped_reason`; a dialogue dropped whole loses every other turn
    (DIALOGUE_DROPPED); otherwise the earliest cut removes every later turn (CUT_AWAY). Turns
    not named stay.
    """
    turns = list(turns)
    removed: dict[int, str] = {}
    if WHOLE_DIALOGUE in drops.values():
        removed = dict.fromkeys(turns, DIALOGUE_DROPPED)
    elif drops:
        cut = min(drops)
        removed = {turn: CUT_AWAY for turn in turns if turn > cut}
    removed.update(dict.fromkeys(drops, dropped_reason))
    return removed


def kept_turns_removed(removed: Mapping[int, str], kept: Iterable[int], deciding: int) -> list[int]:
    """Return the turns a checker explicitly kept (or fixed) that `removed` takes out, other than
    the turn being decided: such a turn is never dropped without its removal being confirmed."""
    return sorted(turn for turn in set(kept) if turn in removed and turn != deciding)


def turns_text(turns: Sequence[int]) -> str:
    """Return "turn 3" or "turns 3, 4 and 5"."""
    if len(turns) == 1:
        return f"turn {turns[0]}"
    return f"turns {', '.join(str(turn) for turn in turns[:-1])} and {turns[-1]}"


@dataclass(frozen=True)
class CheckedSample:
    """One submitted spot-check as the acceptance figures need it."""

    verdict: str
    stage: str  # blamed stage ("" for keep)
    dialogue_turn: bool


@dataclass(frozen=True)
class StageAcceptance:
    stage: str
    accepted: Proportion  # checked samples this stage passed that were not blamed on it
    blamed_fix: int
    blamed_drop: int


def applies_to(stage: str, dialogue_turn: bool) -> bool:
    """Return True when a finished sample went through `stage` (trajectories: dialogue turns only)."""
    return stage != TRAJECTORIES or dialogue_turn


def acceptance_by_stage(checks: Iterable[CheckedSample]) -> list[StageAcceptance]:
    """Return, per sample stage, the share of checked samples not fixed or dropped because of it.

    Every checked sample finished the pipeline, so it passed each stage that applies to it; a
    fix or drop counts against the one stage it is blamed on, and for every other stage the
    sample was accepted. The interval is Wilson's 95% score interval.
    """
    checks = list(checks)
    result = []
    for stage in SAMPLE_STAGES:
        passed = [check for check in checks if applies_to(stage, check.dialogue_turn)]
        fixed = sum(1 for check in passed if check.stage == stage and check.verdict == FIX)
        dropped = sum(1 for check in passed if check.stage == stage and check.verdict == DROP)
        accepted = wilson_interval(len(passed) - fixed - dropped, len(passed))
        result.append(StageAcceptance(stage, accepted, fixed, dropped))
    return result


def overall_acceptance(checks: Iterable[CheckedSample]) -> Proportion:
    """Return the share of checked samples kept as they were."""
    verdicts = [check.verdict for check in checks]
    return wilson_interval(verdicts.count(KEEP), len(verdicts))


# Which configuration value belongs to which filter stage, and which way is stricter (all higher).
THRESHOLD_STAGES: dict[str, str] = {
    "query_min_score": QUERY_FILTER,
    "consistency_min_confidence": CONSISTENCY,
    "response_min_score": RESPONSE_FILTER,
}
THRESHOLD_TITLES: dict[str, str] = {
    "query_min_score": "Quality and safety filter: lowest score kept on every criterion (1-5)",
    "consistency_min_confidence": "Emotion consistency: lowest confidence kept (0-1)",
    "response_min_score": "Reasoning and response filter: lowest score kept on every criterion (1-5)",
}
WHOLE_NUMBER_THRESHOLDS = frozenset({"query_min_score", "response_min_score"})
THRESHOLD_RANGES: dict[str, tuple[float, float]] = {
    "query_min_score": (1, 5),
    "consistency_min_confidence": (0.0, 1.0),
    "response_min_score": (1, 5),
}


def tightening_problem(setting: str, current: float, proposed: float) -> str | None:
    """Return why `proposed` is not a tightening of `setting`, or None when it is.

    Only tightening is offered: a stricter filter can be re-applied to the samples it kept, but
    a looser one would have to bring back samples dropped earlier, which means a new build.
    """
    if setting not in THRESHOLD_STAGES:
        return f"{setting!r} is not a filter threshold"
    low, high = THRESHOLD_RANGES[setting]
    if not low <= proposed <= high:
        return f"the value must lie between {low:g} and {high:g}"
    if setting in WHOLE_NUMBER_THRESHOLDS and proposed != int(proposed):
        return "filter scores are whole numbers"
    if proposed <= current:
        return f"a tighter value is above the current {current:g}"
    return None


def affected_samples(outcomes: Mapping[int, str]) -> set[int]:
    """Return the samples a tightened filter must judge again: those it kept.

    `outcomes` maps each sample that reached the filter to its outcome there ("kept" or
    "dropped"). Samples the looser filter dropped stay dropped (a stricter one drops them too);
    samples dropped before it never reach it. A dialogue's turns share their outcome at every
    stage (one dropped turn drops the dialogue), so a dialogue is redone whole, from its first turn.
    """
    return {sample for sample, outcome in outcomes.items() if outcome == "kept"}
