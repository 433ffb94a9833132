"""Read-only aggregations of the outputs pages (each a fixed number of queries)."""

from __future__ import annotations

from typing import NamedTuple

from django.db.models import Count

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
    """Return what deleting a system takes with it: its outputs and their judgements."""
    return {
        "outputs": system.outputs.count(),
        "judgements": system.outputs.aggregate(n=Count("judgements"))["n"],
    }
