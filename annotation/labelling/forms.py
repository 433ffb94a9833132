"""Reading label documents out of the workbench and adjudication forms (and back into them).

Both pages post the same field names, so one parser serves annotators and leads:

- `p_<field>` for single perception values (`p_modality_conflict` is a checkbox),
- `p_stressed_words` and `p_emotion_segments` as JSON (the browser keeps them in hidden inputs),
- `t_context`, `t_latent_need`, `t_core_demand` as text, `t_constraints` one per line,
- `s_<strategy slug>` = "recommended" | "not_recommended" | "" for each strategy of the taxonomy,
- `x_emotion_change`, `x_last_strategy_helped`, `x_emotion_change_cause`, `x_strategy_adaptation`
  and `x_adaptation_strategies` (checkboxes) for the cross-turn labels of a later dialogue turn,
- `version`: the version of the annotation (or gold reference) the page was showing.

Nothing here touches the database; checking values against vocabularies is label_schema's job.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from annotation.labelling.dialogue.cross_turn import CROSS_TURN_CHOICES, CROSS_TURN_TEXT_FIELDS
from annotation.labelling.schema import (
    CHOICES,
    PERCEPTION_TEXT_FIELDS,
    TOM_TEXT_FIELDS,
    field_label,
    normalise_perception,
    normalise_tom,
)

STRATEGY_PREFIX = "s_"
RECOMMENDED = "recommended"
NOT_RECOMMENDED = "not_recommended"


class FormData(Protocol):
    """What the parser needs of a QueryDict."""

    def get(self, key: str, default: Any = None) -> Any: ...

    def getlist(self, key: str, default: Any = None) -> list[Any]: ...

    def __iter__(self) -> Iterator[str]: ...


class FormError(ValueError):
    """The form data cannot be read (not a person's mistake: a broken page or a hand-made request)."""


def labels_from_form(data: FormData) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the (perception, tom) documents posted by a workbench or adjudication form."""
    perception: dict[str, Any] = {}
    for name in (*CHOICES, *PERCEPTION_TEXT_FIELDS):
        perception[name] = str(data.get(f"p_{name}", "") or "").strip()
    perception["modality_conflict"] = data.get("p_modality_conflict", "") in ("on", "true", "1")
    if not perception["modality_conflict"]:
        perception["conflict_kind"] = ""
    perception["stressed_words"] = _json_list(data, "p_stressed_words")
    perception["emotion_segments"] = sorted(
        _json_list(data, "p_emotion_segments"),
        key=lambda segment: segment.get("start", 0) if isinstance(segment, dict) else 0,
    )

    tom: dict[str, Any] = {name: str(data.get(f"t_{name}", "") or "").strip() for name in TOM_TEXT_FIELDS}
    tom["constraints"] = list(
        dict.fromkeys(
            line.strip() for line in str(data.get("t_constraints", "") or "").splitlines() if line.strip()
        )
    )
    recommended, not_recommended = [], []
    for key in data:
        if not key.startswith(STRATEGY_PREFIX):
            continue
        choice = data.get(key, "")
        if choice == RECOMMENDED:
            recommended.append(key.removeprefix(STRATEGY_PREFIX))
        elif choice == NOT_RECOMMENDED:
            not_recommended.append(key.removeprefix(STRATEGY_PREFIX))
    tom["recommended_strategies"] = recommended
    tom["not_recommended_strategies"] = not_recommended
    return normalise_perception(perception), normalise_tom(tom)


CROSS_TURN_PREFIX = "x_"


def cross_turn_from_form(data: FormData) -> dict[str, Any]:
    """Return the cross-turn document posted (every value empty when the page showed no such fields)."""
    document: dict[str, Any] = {
        name: str(data.get(f"{CROSS_TURN_PREFIX}{name}", "") or "").strip()
        for name in (*CROSS_TURN_CHOICES, *CROSS_TURN_TEXT_FIELDS)
    }
    chosen = data.getlist(f"{CROSS_TURN_PREFIX}adaptation_strategies") or []
    document["adaptation_strategies"] = list(dict.fromkeys(str(slug) for slug in chosen if slug))
    return document


def version_from_form(data: FormData) -> int:
    """Return the posted version the page was made from."""
    try:
        return int(data.get("version", ""))
    except (TypeError, ValueError):
        raise FormError("The form carries no version; reload the page.") from None


def page_session_from_form(data: FormData) -> str:
    """Return the posted id of the browser tab that sent the save (static/js/workbench_keep.js),
    or "" when there is none; at most 40 characters of letters, digits and dashes."""
    value = str(data.get("page_session", "") or "")
    return value if len(value) <= 40 and all(c.isalnum() or c == "-" for c in value) else ""


def _json_list(data: FormData, key: str) -> list[Any]:
    raw = data.get(key, "") or "[]"
    try:
        value = json.loads(raw)
    except ValueError:
        raise FormError(f"{_human(key)} could not be read; reload the page.") from None
    if not isinstance(value, list):
        raise FormError(f"{_human(key)} could not be read (not a list); reload the page.")
    return value


def _human(key: str) -> str:
    # "p_emotion_segments" -> "Emotion segments": form names are for programs, not for people.
    return field_label(f"perception.{key.removeprefix('p_')}")


def strategy_choices(tom: dict[str, Any], slugs: Sequence[str]) -> dict[str, str]:
    """Return {slug: "recommended" | "not_recommended" | ""} for rendering the strategy radios."""
    recommended = set(tom.get("recommended_strategies", []))
    not_recommended = set(tom.get("not_recommended_strategies", []))
    return {
        slug: RECOMMENDED if slug in recommended else NOT_RECOMMENDED if slug in not_recommended else ""
        for slug in slugs
    }
