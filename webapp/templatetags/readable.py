"""Template tags that show job results, parameters and metadata as labelled facts (webapp.lib.readable)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django import template
from django.urls import NoReverseMatch, reverse

from webapp.lib.provenance import describe
from webapp.lib.readable import facts, failure_sentence

register = template.Library()


@dataclass(frozen=True)
class ShownFact:
    label: str
    text: str
    url: str


@register.simple_tag
def readable_facts(data: Mapping[str, Any] | None) -> list[ShownFact]:
    """Return the facts of a result or parameters dict, their links reversed (no link if no page)."""
    shown: list[ShownFact] = []
    for fact in facts(data):
        url = ""
        if fact.url_name:
            try:
                url = reverse(fact.url_name, args=[fact.url_arg])
            except NoReverseMatch:
                url = ""
        shown.append(ShownFact(fact.label, fact.text, url))
    return shown


@register.filter
def failure_text(error: str) -> str:
    """Return a failed job's error as one sentence saying what to do next."""
    return failure_sentence(error)


@register.filter
def ran_with(provenance: Mapping[str, str] | None) -> str:
    """Return a job's or checkpoint's provenance (commit, library versions) as one line."""
    return describe(provenance or {})
