"""What a backup test compares: every row of every table and every media file, by checksum."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from django.core.files.storage import default_storage
from django.core.management import call_command

from webapp.backup import backed_up_models, columns, media_keys


def every_row() -> dict[str, tuple[int, str]]:
    """Per table: its row count and a sha256 of every row's values, in primary-key order."""
    tables = {}
    for model in backed_up_models():
        digest = hashlib.sha256()
        count = 0
        names = [field.attname for field in columns(model)]
        for row in model._base_manager.order_by("pk").values_list(*names).iterator():
            digest.update(repr(row).encode())
            count += 1
        tables[model._meta.label_lower] = (count, digest.hexdigest())
    return tables


def every_media_file() -> dict[str, str]:
    found = {}
    for key in media_keys(default_storage):
        with default_storage.open(key, "rb") as handle:
            found[key] = hashlib.sha256(handle.read()).hexdigest()
    return found


def empty_studio(settings: Any, media: Path) -> None:
    """Make this test's studio what a fresh install is: a migrated, empty database and new media folder."""
    call_command("flush", interactive=False, verbosity=0)
    media.mkdir()
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(media)},
        },
    }
