"""Checking label documents against their item, for the annotation workflows (`workflows`) and
adjudication: every problem listed at once, drafts kept while only incomplete.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

from annotation.labelling.dialogue.cross_turn import check_cross_turn, needs_cross_turn, normalise_cross_turn
from annotation.labelling.models import Annotation, Strategy
from annotation.labelling.schema import (
    TOM_SET_FIELDS,
    TOM_TEXT_FIELDS,
    LabelProblem,
    check_perception,
    check_tom,
    normalise_perception,
    normalise_tom,
    script_words,
)
from annotation.recording.models import Item, Scenario


class LabellingError(Exception):
    """A save or submit that cannot be done; the message is written for the annotator."""


class InvalidLabels(LabellingError):
    def __init__(self, problems: Sequence[LabelProblem]) -> None:
        self.problems = list(problems)
        # People read this message: fields by their names ("Polarity"), never by their paths.
        super().__init__("; ".join(str(problem) for problem in problems))


class LabelDocuments(NamedTuple):
    perception: dict[str, Any]
    tom: dict[str, Any]
    cross_turn: dict[str, Any]  # {} unless the item is a later dialogue turn


def checked_labels(
    item: Item,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    *,
    complete: bool,
    strategy_slugs: Collection[str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the perception and ToM documents normalised (see `checked_documents`, with no
    cross-turn labels: enough for a single item or a first turn)."""
    documents = checked_documents(
        item, perception, tom, None, complete=complete, strategy_slugs=strategy_slugs
    )
    return documents.perception, documents.tom


def checked_documents(
    item: Item,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    cross_turn: Mapping[str, Any] | None,
    *,
    complete: bool,
    strategy_slugs: Collection[str] | None = None,
) -> LabelDocuments:
    """Return the documents normalised, or raise InvalidLabels listing every problem for this item.

    A draft (`complete=False`) keeps work in progress (`LabelProblem.incomplete`: a segment still
    without its emotion, an end typed before its start): autosave must never lose a keystroke, so
    only malformed values refuse it; submitting (`complete=True`) refuses every problem.
    `cross_turn`: the cross-turn labels, which only a later dialogue turn has and must have
    (`annotation.labelling.dialogue.cross_turn.needs_cross_turn`); None or {} for other items.

    `strategy_slugs`: the taxonomy's slugs (or those of the named strategies that exist), when the
    caller has them already; else they are read here.
    """
    perception_doc, tom_doc = normalise_perception(perception), normalise_tom(tom)
    problems = label_problems(
        item, perception_doc, tom_doc, complete=complete, strategy_slugs=strategy_slugs, cross_turn=cross_turn
    )
    refused = problems if complete else [problem for problem in problems if not problem.incomplete]
    if refused:
        raise InvalidLabels(refused)
    return LabelDocuments(
        perception_doc, tom_doc, normalise_cross_turn(cross_turn, needed=needs_cross_turn(item.turn))
    )


def label_problems(
    item: Item,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    *,
    complete: bool,
    strategy_slugs: Collection[str] | None = None,
    cross_turn: Mapping[str, Any] | None = None,
) -> list[LabelProblem]:
    """Return every problem of normalised label documents (and the raw cross-turn one) for this item."""
    problems = check_perception(
        perception,
        emotion_shift=item.scenario == Scenario.EMOTION_SHIFT,
        words=script_words(item.text),
        complete=complete,
    )
    if strategy_slugs is None:
        strategy_slugs = set(Strategy.objects.values_list("slug", flat=True))
    problems += check_tom(tom, strategy_slugs=strategy_slugs, complete=complete)
    problems += check_cross_turn(
        cross_turn, needed=needs_cross_turn(item.turn), strategy_slugs=strategy_slugs, complete=complete
    )
    return problems


def draft_problems(
    annotation: Annotation, *, strategy_slugs: Collection[str] | None = None
) -> list[LabelProblem]:
    """Return the unfinished parts a saved draft holds (reported beside "Draft saved");
    `strategy_slugs` as for `checked_labels`."""
    return label_problems(
        annotation.item,
        annotation.perception,
        annotation.tom,
        complete=False,
        strategy_slugs=strategy_slugs,
        cross_turn=annotation.cross_turn,
    )


def changed_fields(
    annotation: Annotation, perception: Mapping[str, Any], tom: Mapping[str, Any]
) -> list[str]:
    """Return the fields ("tom.latent_need", "perception.pitch") whose final value differs from
    what the machine draft or the acoustic analysis suggested."""
    changed = []
    for name, suggested in annotation.suggestions.items():
        if perception.get(name) != suggested:
            changed.append(f"perception.{name}")
    draft = annotation.machine_draft
    if draft is not None:
        drafted = normalise_tom(draft.tom)
        for name in TOM_TEXT_FIELDS:
            if " ".join(str(tom.get(name, "")).split()) != " ".join(str(drafted[name]).split()):
                changed.append(f"tom.{name}")
        for name in TOM_SET_FIELDS:
            if set(tom.get(name, [])) != set(drafted[name]):
                changed.append(f"tom.{name}")
    return changed
