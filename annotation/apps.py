from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _seed_empty_taxonomy(**_: Any) -> None:
    from annotation.labelling.taxonomy import seed_default_taxonomy_if_empty

    seed_default_taxonomy_if_empty()


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Recording and annotation"

    def ready(self) -> None:
        from annotation import tasks  # noqa: F401  (registers the job kinds)

        # Migration 0006 seeds the taxonomy once; a database flushed later (tests, `manage.py flush`)
        # gets it back here, because flush ends with post_migrate.
        post_migrate.connect(_seed_empty_taxonomy, sender=self)

        # Recording announces an accepted recording and labelling starts annotation: the signal
        # keeps imports running one way (recording never imports labelling).
        from annotation.labelling.assignment import start_annotation_when_recorded
        from annotation.recording.reviews import recording_accepted

        recording_accepted.connect(
            start_annotation_when_recorded, dispatch_uid="start_annotation_when_recorded"
        )

    def seed_demo(self, progress: Callable[[float, str], None]) -> dict[str, Any]:
        """Seed demo users, items with takes, annotations and gold (called by `manage.py seed_demo`)."""
        from annotation.demo.dialogue_labels import seed_dialogue_labels
        from annotation.demo.dialogues import seed_dialogues
        from annotation.demo.labels import seed_demo_labels
        from annotation.demo.recording import seed_items, seed_users

        logins = seed_users()
        items = seed_items(progress)
        progress(1.0, f"{items} demo items ready; speaking 3 five-turn dialogues")
        dialogues = seed_dialogues()
        progress(1.0, f"{dialogues} demo dialogues ready; labelling and adjudicating")
        gold = seed_demo_labels()
        dialogue_gold = seed_dialogue_labels()
        progress(1.0, f"labels ready: {gold} items and {dialogue_gold} dialogue turns with gold")
        return {
            "logins": logins,
            "items": items,
            "dialogues": dialogues,
            "gold": gold,
            "dialogue_gold": dialogue_gold,
        }
