"""A fresh studio inside a test: what an import "into an empty studio" starts from."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db import DEFAULT_DB_ALIAS

from annotation.recording.consent.models import TakeUse
from annotation.recording.models import Dialogue, Item
from webapp.archive_admin import is_work_product


def empty_the_studio(*, dialogues: bool = False) -> None:
    """Remove every item and all the work under it, as if the studio were newly installed.

    A running studio never deletes work (`webapp.models.Archivable`); only a test that stands in
    for a second installation goes around that, here and nowhere else. Foreign keys are checked at
    commit, so the order of the tables does not matter.
    """
    # The lineage manifest names takes (CASCADE there, but the raw deletes below skip cascades).
    TakeUse.objects.all().delete()
    for model in apps.get_models():
        if is_work_product(model):
            for field in model._meta.many_to_many:
                through: Any = field.remote_field.through
                through._default_manager.all().delete()
            rows: Any = model._default_manager.all()
            rows._raw_delete(DEFAULT_DB_ALIAS)
    Item.objects.update(recording=None)
    Item.objects.all().delete()
    if dialogues:
        Dialogue.objects.all().delete()
