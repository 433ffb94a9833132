"""The strategy taxonomy and default annotation project every fresh database starts with."""

from __future__ import annotations

from annotation.labelling.models import AnnotationProject, Strategy
from webapp.lib.vocabulary import DEFAULT_STRATEGIES

DEFAULT_PROJECT_NAME = "EchoEval"


def seed_default_taxonomy_if_empty() -> None:
    """Create the nine default strategies and the default project, but only into empty tables.

    Admins may rename or retire strategies; re-seeding a table that holds anything would undo that.
    """
    if not Strategy.objects.exists():
        Strategy.objects.bulk_create(
            Strategy(slug=slug, name=name, position=position * 10)
            for position, (slug, name) in enumerate(DEFAULT_STRATEGIES, start=1)
        )
    if not AnnotationProject.objects.exists():
        AnnotationProject.objects.create(
            name=DEFAULT_PROJECT_NAME,
            description="Every EchoEval item: three independent annotators, as in the paper (appendix C.2).",
            annotators_per_item=3,
        )
