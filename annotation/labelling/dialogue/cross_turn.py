"""Cross-turn labels of a dialogue turn: what changed since the user's previous turn (pure, no Django).

A later turn of a dialogue (turn 2 onwards) is labelled as a single item is (perception and ToM)
and, in a third document, against the turn before it:

cross_turn = {
    "emotion_change": one of webapp.lib.vocabulary.EMOTION_CHANGES
                      ("intensified" | "eased" | "unchanged" | "shifted" to another emotion),
    "emotion_change_cause": str,            (what in the exchange moved the emotion)
    "last_strategy_helped": "yes" | "partly" | "no",   (the assistant's reply to the previous turn)
    "strategy_adaptation": str,              (how the assistant must adapt now)
    "adaptation_strategies": [strategy slug, ...],   (optional: taxonomy strategies for it)
}

The rule of which items carry it lives here only (`needs_cross_turn`): a first turn and a single
item have no previous turn, so their cross-turn document is empty and anything in it is refused.
As with perception and ToM, an empty value means "not labelled yet": a draft may keep it, a
submission may not (`LabelProblem.incomplete`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from annotation.labelling.schema import LabelProblem
from webapp.lib.vocabulary import EMOTION_CHANGES, STRATEGY_OUTCOMES

CROSS_TURN_CHOICES: dict[str, tuple[str, ...]] = {
    "emotion_change": EMOTION_CHANGES,
    "last_strategy_helped": STRATEGY_OUTCOMES,
}
CROSS_TURN_TEXT_FIELDS = ("emotion_change_cause", "strategy_adaptation")
CROSS_TURN_SET_FIELDS = ("adaptation_strategies",)
# The categorical fields agreement is computed for (nominal alpha, like polarity and emotion).
CROSS_TURN_CATEGORICAL_FIELDS = tuple(CROSS_TURN_CHOICES)

# What the workbench and adjudication pages call each value.
CHANGE_LABELS: dict[str, str] = {
    "intensified": "Intensified",
    "eased": "Eased",
    "unchanged": "Unchanged",
    "shifted": "Shifted to another emotion",
}
HELPED_LABELS: dict[str, str] = {"yes": "Yes", "partly": "Partly", "no": "No"}


def needs_cross_turn(turn: int | None) -> bool:
    """Return True when an item with this dialogue turn number (None: a single item) needs cross-turn labels.

    The one rule for it: a dialogue turn after the first. Workbench, submit, adjudication, export
    and import all ask this.
    """
    return turn is not None and turn > 1


def empty_cross_turn() -> dict[str, Any]:
    """Return a cross-turn document with every field present and nothing labelled."""
    return {
        "emotion_change": "",
        "emotion_change_cause": "",
        "last_strategy_helped": "",
        "strategy_adaptation": "",
        "adaptation_strategies": [],
    }


def normalise_cross_turn(raw: Mapping[str, Any] | None, *, needed: bool) -> dict[str, Any]:
    """Return the cross-turn document an item keeps: every field present when `needed`, else {}.

    Unknown keys are dropped. Call `check_cross_turn` on the raw value first: for an item that
    needs none, anything labelled is refused there rather than silently dropped here.
    """
    if not needed:
        return {}
    document = empty_cross_turn()
    for key in document:
        if raw and key in raw and raw[key] is not None:
            document[key] = raw[key]
    return document


def is_blank(raw: Mapping[str, Any] | None) -> bool:
    """Return True when a cross-turn document labels nothing (absent, or every value empty)."""
    return not raw or all(value in ("", [], None) for value in raw.values())


def check_cross_turn(
    raw: Mapping[str, Any] | None,
    *,
    needed: bool,
    strategy_slugs: Collection[str] | None = None,
    complete: bool = False,
) -> list[LabelProblem]:
    """Return what is wrong with a cross-turn document (empty list: nothing).

    For an item that needs none (`needs_cross_turn` False), any labelled value is a problem, draft
    or not. Otherwise values must come from their vocabularies, strategies from the taxonomy
    (when `strategy_slugs` is given); with `complete` the two choices and the two texts are required.
    """
    if not needed:
        if is_blank(raw):
            return []
        return [
            LabelProblem("cross_turn", "Only a later turn of a dialogue (turn 2 on) has cross-turn labels.")
        ]
    if raw is not None and not isinstance(raw, Mapping):
        return [LabelProblem("cross_turn", "Must be an object.")]
    document = normalise_cross_turn(raw, needed=True)
    problems: list[LabelProblem] = []
    for field, allowed in CROSS_TURN_CHOICES.items():
        value = document[field]
        if not isinstance(value, str) or (value and value not in allowed):
            problems.append(
                LabelProblem(f"cross_turn.{field}", f"{value!r} is not one of {', '.join(allowed)}")
            )
        elif complete and not value:
            problems.append(LabelProblem(f"cross_turn.{field}", "Choose a value.", True))
    for field in CROSS_TURN_TEXT_FIELDS:
        value = document[field]
        if not isinstance(value, str):
            problems.append(LabelProblem(f"cross_turn.{field}", "Must be text."))
        elif complete and not value.strip():
            problems.append(LabelProblem(f"cross_turn.{field}", "Write a few words.", True))
    chosen = document["adaptation_strategies"]
    if not isinstance(chosen, list) or not all(isinstance(slug, str) for slug in chosen):
        problems.append(LabelProblem("cross_turn.adaptation_strategies", "Must be a list of strategies."))
    elif strategy_slugs is not None and (unknown := [slug for slug in chosen if slug not in strategy_slugs]):
        problems.append(
            LabelProblem("cross_turn.adaptation_strategies", f"Unknown strategies: {', '.join(unknown)}")
        )
    return problems


def named_strategies(raw: Mapping[str, Any] | None) -> list[str]:
    """Return the strategy slugs a cross-turn document names (for checking that they exist)."""
    chosen = (raw or {}).get("adaptation_strategies")
    return [str(slug) for slug in chosen] if isinstance(chosen, list) else []
