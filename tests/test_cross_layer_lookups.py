"""No ORM lookup reaches up the pipeline.

import-linter keeps each workflow from importing the ones after it, but a lookup string such as
`gold_references__is_current` in labelling walks into gold's table without an import, so the linter
never sees it: a second reader of gold's rule, in a layer that must not know gold. This test reads
every `a__b` lookup (keyword arguments and string arguments of ORM calls) in the layered packages
and fails when one of its hops names a relation whose every possible target model lives in a layer
above the module's own. The layers are the import-linter "pipeline" contract's, read from
pyproject.toml, so the two checks cannot drift apart.
"""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent


def pipeline_layers() -> list[list[str]]:
    """Return the pipeline contract's layers, highest first, each a list of package names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "pipeline")
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def layer_of(module: str, layers: list[list[str]]) -> int | None:
    """Return the index of the layer holding `module` (0 is the highest), or None if unlayered."""
    for index, packages in enumerate(layers):
        if any(module == package or module.startswith(package + ".") for package in packages):
            return index
    return None


PLAIN = -1  # the "layer" of a plain (non-relation) field: a hop that leads to no model


def relation_targets(layers: list[list[str]]) -> dict[str, set[int | None]]:
    """Return {field name as a lookup hop: the layers of every model it can lead to}."""
    targets: dict[str, set[int | None]] = defaultdict(set)
    for model in apps.get_models():
        for field in model._meta.get_fields():
            related = field.related_model if field.is_relation else None
            if related is None or isinstance(related, str):
                # A plain field (a JSON `scores__has_key`) leads nowhere: what follows it are keys.
                targets[field.name].add(PLAIN)
                continue
            # A reverse relation's name is its query name (`gold_references`), as lookups spell it.
            targets[field.name].add(layer_of(related.__module__, layers))
    return targets


# ORM calls whose string arguments are lookup paths (keyword arguments of every call are read).
PATH_ARGUMENT_CALLS = {
    "values",
    "values_list",
    "order_by",
    "select_related",
    "prefetch_related",
    "only",
    "defer",
    "F",
    "Count",
    "Sum",
    "Max",
    "Min",
    "Avg",
    "Prefetch",
    "OuterRef",
}


def lookup_paths(source: str) -> list[tuple[int, str]]:
    """Return (line, path) for every lookup path with a `__` hop in the source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg and "__" in keyword.arg:
                found.append((node.lineno, keyword.arg))
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in PATH_ARGUMENT_CALLS:
            for argument in node.args:
                if (
                    isinstance(argument, ast.Constant)
                    and isinstance(argument.value, str)
                    and "__" in argument.value
                ):
                    found.append((node.lineno, argument.value.lstrip("-")))
    return found


def upward_hops(
    module: str, source: str, layers: list[list[str]], targets: dict[str, set[int | None]]
) -> list[str]:
    """Return "line: path (hop)" for each lookup in `source` with a hop into a higher layer only."""
    own = layer_of(module, layers)
    if own is None:
        return []
    problems = []
    for line, path in lookup_paths(source):
        for hop in path.split("__"):
            reached = targets.get(hop, set())
            if reached and all(layer is not None and PLAIN < layer < own for layer in reached):
                problems.append(f"{module}:{line}: {path} ({hop})")
                break
            if PLAIN in reached:  # past a plain field come JSON keys and transforms, not relations
                break
    return problems


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_no_lookup_reaches_a_later_layer():
    layers = pipeline_layers()
    targets = relation_targets(layers)
    problems = []
    for packages in layers:
        for package in packages:
            for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py")):
                if "migrations" in path.parts:
                    continue
                problems += upward_hops(module_name(path), path.read_text(), layers, targets)
    assert problems == [], "lookups into a later workflow's models (ask its layer instead):\n" + "\n".join(
        problems
    )


def test_the_scanner_finds_an_upward_hop_and_passes_a_downward_one():
    layers = pipeline_layers()
    targets = relation_targets(layers)
    upward = "Item.objects.filter(gold_references__is_current=True).values('gold_references__perception')"
    assert sorted(upward_hops("annotation.labelling.views", upward, layers, targets)) == [
        "annotation.labelling.views:1: gold_references__is_current (gold_references)",
        "annotation.labelling.views:1: gold_references__perception (gold_references)",
    ]
    # Gold may read recording's tables: that is the direction it imports in.
    assert upward_hops("annotation.gold.views", upward, layers, targets) == []
    downward = "GoldReference.objects.filter(item__dialogue__isnull=False).order_by('-item__turn')"
    assert upward_hops("annotation.gold.views", downward, layers, targets) == []
    assert upward_hops("annotation.recording.models", "x.filter(annotations__pk=1)", layers, targets) == [
        "annotation.recording.models:1: annotations__pk (annotations)"
    ]
