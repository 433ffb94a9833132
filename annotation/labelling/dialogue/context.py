"""What the workbench and the adjudication page add for a dialogue turn: the history above it and,
on a later turn, the cross-turn fields (the rule of which items have them: `cross_turn.needs_cross_turn`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.models import AnonymousUser

from annotation.labelling.dialogue.cross_turn import (
    CHANGE_LABELS,
    HELPED_LABELS,
    needs_cross_turn,
    normalise_cross_turn,
)
from annotation.labelling.dialogue.history import dialogue_history, previous_gold
from annotation.labelling.models import Strategy
from annotation.labelling.schema import LabelProblem
from annotation.recording.models import Item
from webapp.models import User


def dialogue_context(
    item: Item,
    viewer: User | AnonymousUser,
    cross_turn: Mapping[str, Any] | None,
    strategies: Sequence[Strategy],
    problems: Sequence[LabelProblem] = (),
) -> dict[str, Any]:
    """Return the template context of a dialogue turn (empty values for a single item)."""
    needed = needs_cross_turn(item.turn)
    document = normalise_cross_turn(cross_turn, needed=needed)
    chosen = set(document.get("adaptation_strategies", []))
    return {
        "is_dialogue_turn": item.is_dialogue_turn,
        "history": dialogue_history(item, viewer) if item.is_dialogue_turn else [],
        "previous_gold": previous_gold(item) if needed else None,
        "needs_cross_turn": needed,
        "cross_turn": document,
        "change_options": list(CHANGE_LABELS.items()),
        "helped_options": list(HELPED_LABELS.items()),
        "adaptation_rows": [
            (strategy, strategy.slug in chosen)
            for strategy in strategies
            if strategy.active or strategy.slug in chosen
        ],
        "cross_turn_problems": {
            problem.field.removeprefix("cross_turn."): problem.message
            for problem in problems
            if problem.field.startswith("cross_turn")
        },
    }
