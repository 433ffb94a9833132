"""Importing a taxonomy file into the database, all or nothing (``logic.taxonomy`` reads the lines)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction

from ml.builder.logic.taxonomy import read_taxonomy_lines
from ml.builder.models import TaxonomyDomain, TaxonomySubcategory, TaxonomyTopic


class TaxonomyRefused(ValueError):
    """The file had problems; nothing was stored."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:20]))
        self.problems = problems


@dataclass(frozen=True)
class TaxonomyImport:
    created: int
    updated: int
    unchanged: int


def import_taxonomy(lines: Iterable[str]) -> TaxonomyImport:
    """Store every topic of a JSONL taxonomy file, or raise TaxonomyRefused and store none.

    Names match existing rows case-insensitively, so re-importing a file changes nothing and a
    file may add topics to a domain that exists.
    """
    rows, problems = read_taxonomy_lines(lines)
    if problems:
        raise TaxonomyRefused(problems)
    created = updated = unchanged = 0
    with transaction.atomic():
        domains: dict[str, TaxonomyDomain] = {}
        subcategories: dict[tuple[str, str], TaxonomySubcategory] = {}
        for row in rows:
            domain_key = row.domain.lower()
            if domain_key not in domains:
                domains[domain_key] = TaxonomyDomain.objects.filter(
                    name__iexact=row.domain
                ).first() or TaxonomyDomain.objects.create(name=row.domain)
            domain = domains[domain_key]
            subcategory_key = (domain_key, row.subcategory.lower())
            if subcategory_key not in subcategories:
                subcategories[subcategory_key] = TaxonomySubcategory.objects.filter(
                    domain=domain, name__iexact=row.subcategory
                ).first() or TaxonomySubcategory.objects.create(domain=domain, name=row.subcategory)
            subcategory = subcategories[subcategory_key]
            topic = TaxonomyTopic.objects.filter(subcategory=subcategory, name__iexact=row.topic).first()
            if topic is None:
                TaxonomyTopic.objects.create(
                    subcategory=subcategory, name=row.topic, description=row.description, active=row.active
                )
                created += 1
            elif (topic.description, topic.active) != (row.description, row.active):
                topic.description, topic.active = row.description, row.active
                topic.save(update_fields=["description", "active"])
                updated += 1
            else:
                unchanged += 1
    return TaxonomyImport(created, updated, unchanged)
