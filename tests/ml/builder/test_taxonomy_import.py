"""Importing a taxonomy file stores all of it or none of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from ml.builder.models import TaxonomyDomain, TaxonomySubcategory, TaxonomyTopic
from ml.builder.taxonomy_import import TaxonomyRefused, import_taxonomy

pytestmark = pytest.mark.django_db


def _line(domain: str, subcategory: str, topic: str, **extra: object) -> str:
    return json.dumps({"domain": domain, "subcategory": subcategory, "topic": topic, **extra})


def test_a_file_creates_domains_subcategories_and_topics_and_reimporting_changes_nothing() -> None:
    lines = [
        _line("Work", "Career", "a missed promotion"),
        _line("Work", "Career", "layoffs"),
        _line("Family", "Parents", "illness"),
    ]
    assert import_taxonomy(lines).created == 3
    assert (TaxonomyDomain.objects.count(), TaxonomySubcategory.objects.count()) == (2, 2)
    again = import_taxonomy([*lines[:2], _line("work", "career", "illness", active=False)])
    assert (again.created, again.unchanged) == (1, 2)
    assert TaxonomyTopic.objects.filter(active=False).get().subcategory.name == "Career"


def test_one_bad_line_stores_nothing() -> None:
    with pytest.raises(TaxonomyRefused) as refused:
        import_taxonomy([_line("Work", "Career", "layoffs"), '{"domain": "Work"}'])
    assert refused.value.problems == ['line 2: "subcategory" must be a non-empty text']
    assert not TaxonomyTopic.objects.exists() and not TaxonomyDomain.objects.exists()


def test_the_command_reports_counts_or_every_problem(tmp_path: Path, capsys) -> None:
    good = tmp_path / "taxonomy.jsonl"
    good.write_text(_line("Work", "Career", "layoffs") + "\n", encoding="utf-8")
    call_command("import_taxonomy", str(good))
    assert "1 topics created" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nonsense\n", encoding="utf-8")
    with pytest.raises(CommandError, match="line 1: not JSON"):
        call_command("import_taxonomy", str(bad))
