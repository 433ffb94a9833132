"""Job results, parameters and checkpoint metadata as labelled facts a person reads, never a dict.

A job's result is JSON its job function chose; the pages show it through `facts`, which names
each figure in words, formats numbers, flattens nested settings ("LoRA rank"), and turns ids of
things that have a page (a system, a checkpoint, a judge) into links. Links are URL names and
ids here; the template tag (`webapp.templatetags.readable`) reverses them, so this module stays
free of Django and of the apps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fact:
    label: str
    text: str
    url_name: str = ""  # a page to link the text to, with url_arg
    url_arg: int | None = None


LABELS: dict[str, str] = {
    "to_judge": "Stages to judge",
    "valid": "Valid judgements",
    "judge_errors": "Judge errors (excluded from results)",
    "unreachable": "Prompts without an answer (run again)",
    "already_judged": "Already judged by another attempt",
    "no_gold": "Outputs without gold (not judged)",
    "cached": "Answers from the cache",
    "system": "System",
    "checkpoint": "Checkpoint",
    "reward_checkpoint": "Reward model",
    "judge_config": "Judge",
    "benchmark_version": "Benchmark version",
    "outputs": "Outputs stored",
    "well_formed": "Well-formed outputs",
    "scored": "Outputs scored",
    "skipped": "Skipped",
    "content_mean": "Mean content score",
    "alignment_mean": "Mean audio alignment",
    "uri": "Stored at",
    "resumed": "Resumed after a restart",
    "rows": "Rows",
    "key": "Archive",
    "items_created": "Items created",
    "gold_created": "Gold versions created",
    "annotations_imported": "Annotations imported",
    "annotations_skipped": "Annotations skipped",
    "unknown_annotators": "Unknown annotators",
    "takes": "Takes synthesised",
    "steps": "Steps",
    "start_from": "Started from",
    "checkpoint_name": "Checkpoint name",
    "system_name": "System name",
    "splits": "Splits",
    "lambda_aaa": "λ AAA (Acoustic-Anchored Attention)",
    "aaa_layers": "AAA layers",
    "lora": "LoRA",
    "kl_coef": "KL coefficient",
    "sdca": "SDCA",
    "tau": "gate threshold τ",
    "dtype": "Number format",
    "arch": "Architecture",
    "base_model": "LoRA adapter over",
    "dataset_snapshot_ids": "Dataset snapshots",
    "created_at": "Created",
    "format_version": "Format version",
    "extra": "Other",
    "metrics": "Final",
    "config": "Training",
    "model_config": "Model",
    "rho": "ρ (attention on audio)",
}
# A key whose value is the id of something with a page: the URL name of that page, and the key
# (if any) holding the name to show instead of the bare id.
LINKS: dict[str, tuple[str, str]] = {
    "system": ("evaluation:system_edit", "system_name"),
    "checkpoint": ("ml:checkpoint", "checkpoint_name"),
    "reward_checkpoint": ("ml:checkpoint", ""),
    "judge_config": ("evaluation:judge_config_edit", ""),
}
# Shown by their own key's link or line (provenance: templates/webapp/_ran_with.html), or not meant
# for people (content hashes).
HIDDEN = frozenset({"system_name", "weight_sha256", "provenance"})
_CHECKPOINT_CHOICE = re.compile(r"^checkpoint:(\d+)$")


def label_of(key: str) -> str:
    """Return the words for a result key: a known label, else the key with spaces."""
    return LABELS.get(key, key.replace("_", " ").capitalize())


def _in_sentence(label: str) -> str:
    """Return a label as it reads after another word: "Learning rate" -> "learning rate", "LoRA" kept."""
    first_word = label.split(" ", 1)[0]
    return label if any(char.isupper() for char in first_word[1:]) else label[:1].lower() + label[1:]


def format_value(value: object) -> str:
    """Return a value as a person writes it: 0.1235, 1,024, yes/no, a list joined by commas."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    if isinstance(value, list | tuple):
        return ", ".join(format_value(item) for item in value) if value else "none"
    return str(value)


def facts(data: Mapping[str, Any] | None, *, prefix: str = "") -> list[Fact]:
    """Return the data as labelled facts, nested settings flattened into "Outer inner" labels."""
    if not data:
        return []
    found: list[Fact] = []
    for key, value in data.items():
        if key in HIDDEN:
            continue
        label = f"{prefix} {_in_sentence(label_of(key))}" if prefix else label_of(key)
        if isinstance(value, Mapping):
            found += facts(value, prefix=label) if value else [Fact(label, "none")]
            continue
        if key in LINKS and isinstance(value, int) and not isinstance(value, bool):
            url_name, name_key = LINKS[key]
            name = data.get(name_key) if name_key else None
            found.append(Fact(label, str(name or f"#{value}"), url_name, value))
            continue
        if key == "start_from" and isinstance(value, str):
            found.append(_start_from(label, value))
            continue
        found.append(Fact(label, format_value(value)))
    return found


def _start_from(label: str, value: str) -> Fact:
    match = _CHECKPOINT_CHOICE.match(value)
    if match:
        return Fact(label, f"checkpoint #{match.group(1)}", "ml:checkpoint", int(match.group(1)))
    if value == "tiny":
        return Fact(label, "the tiny demo model (random weights)")
    return Fact(label, value)


def failure_sentence(error: str) -> str:
    """Return a failed job's error as one sentence that says what to do next."""
    # The runner stores "ExceptionName: message"; the class name means nothing to the reader.
    reason = re.sub(r"^[A-Z][A-Za-z0-9_.]*: ", "", error)
    reason = reason.strip().rstrip(".") or "no reason was recorded"
    if "stopped responding" in reason or "kept dying" in reason:
        advice = "check that a worker is running and has enough memory, then start the job again"
    else:
        advice = "the log below has the details; fix the cause, then start the job again"
    return f"This job failed: {reason}; {advice}."
