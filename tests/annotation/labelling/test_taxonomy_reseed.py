"""A flushed database gets the default strategy taxonomy back; a curated one is left alone."""

from __future__ import annotations

from django.core.management import call_command

from annotation.labelling.models import AnnotationProject, Strategy
from annotation.labelling.taxonomy import seed_default_taxonomy_if_empty


def test_flush_restores_the_default_taxonomy(transactional_db: None) -> None:
    call_command("flush", interactive=False, verbosity=0)
    assert Strategy.objects.count() == 9
    assert AnnotationProject.objects.filter(name="EchoEval", annotators_per_item=3).exists()


def test_a_curated_taxonomy_is_not_reseeded(db: None) -> None:
    Strategy.objects.exclude(slug="reassurance").delete()
    seed_default_taxonomy_if_empty()
    assert list(Strategy.objects.values_list("slug", flat=True)) == ["reassurance"]
