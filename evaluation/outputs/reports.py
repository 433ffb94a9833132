"""Read-only aggregations of the outputs pages (each a fixed number of queries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from django.db.models import Count, Prefetch, QuerySet

from annotation.recording.models import Dialogue, Item
from evaluation.outputs.models import ModelOutput, System


class SystemRow(NamedTuple):
    system: System
    versions: list[tuple[str, int]]  # (benchmark version, number of outputs), by version


def system_rows() -> list[SystemRow]:
    """Return every system, by category then name, with its output counts per benchmark version."""
    systems = System.objects.annotate(n_outputs=Count("outputs")).order_by("category", "name")
    versions: dict[int, list[tuple[str, int]]] = {}
    for system_id, version, count in (
        ModelOutput.objects.order_by()
        .values_list("system_id", "benchmark_version")
        .annotate(n=Count("pk"))
        .order_by("benchmark_version")
    ):
        versions.setdefault(system_id, []).append((version, count))
    return [SystemRow(system, versions.get(system.pk, [])) for system in systems]


def deletion_counts(system: System) -> dict[str, int]:
    """Return what keeps a system from being deleted: its outputs (archived ones too) and their judgements."""
    return {
        "outputs": system.outputs.count(),
        "judgements": system.outputs.aggregate(n=Count("judgements"))["n"],
    }


class DialogueTurnOutput(NamedTuple):
    item: Item  # the user turn
    output: ModelOutput | None  # the system's answer to it (with ``n_judgements``), None when missing


class DialogueOutputs(NamedTuple):
    dialogue: Dialogue
    turns: list[DialogueTurnOutput]  # every turn of the dialogue, in turn order


def dialogues_answered_by(system: System, benchmark_version: str) -> QuerySet[Dialogue]:
    """Return the dialogues the system answered at least one turn of for the version, in id order."""
    answered = ModelOutput.objects.for_version(benchmark_version).filter(
        system=system, item__dialogue__isnull=False
    )
    return Dialogue.objects.filter(pk__in=answered.values("item__dialogue_id")).order_by("pk")


def dialogue_outputs(
    system: System, benchmark_version: str, dialogues: Sequence[Dialogue] | QuerySet[Dialogue]
) -> list[DialogueOutputs]:
    """Return the system's outputs to each dialogue's turns, turn by turn (two queries, prefetched)."""
    outputs = (
        ModelOutput.objects.for_version(benchmark_version)
        .filter(system=system)
        .annotate(n_judgements=Count("judgements"))
    )
    turns = (
        Item.objects.order_by("turn")
        .select_related("recording")
        .prefetch_related(Prefetch("model_outputs", queryset=outputs, to_attr="system_outputs"))
    )
    loaded = Dialogue.objects.filter(pk__in=[dialogue.pk for dialogue in dialogues]).order_by("pk")
    return [
        DialogueOutputs(
            dialogue,
            [
                DialogueTurnOutput(item, next(iter(item.system_outputs), None))
                for item in dialogue.ordered_turns
            ],
        )
        for dialogue in loaded.prefetch_related(Prefetch("turns", queryset=turns, to_attr="ordered_turns"))
    ]
