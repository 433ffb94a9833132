"""Re-encode audio stored before imports cleaned it: model outputs and listening-study clips.

Outputs imported (and studies created) before `annotation.audio.clean` existed may still hold the
files as sent, tags and all. This gives each such file a clean copy under a new random key and
points the row at it. Files already clean are left alone, so running it again does nothing. The
old files are kept unless --delete-originals is given (nothing serves them any more).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from annotation.audio.clean import clean_audio, is_clean_wav
from annotation.audio.upload import AudioRejected
from evaluation.outputs.models import ModelOutput
from evaluation.studies.models import StudyStimulus
from webapp.storage import delete_media, new_media_key, read_media, save_media


class Command(BaseCommand):
    help = "Give every model output and study clip a clean re-encoding of its audio (no tags survive)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--delete-originals", action="store_true", help="Delete the replaced files once rows point away"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        targets: list[tuple[Any, str, str]] = [
            (ModelOutput, "response_audio_key", "model_output"),
            (StudyStimulus, "audio_key", "stimulus"),
        ]
        for model, field, kind in targets:
            cleaned, failed = 0, 0
            for row in model.objects.exclude(**{field: ""}).only("pk", field).iterator():
                old_key = getattr(row, field)
                data = read_media(old_key)
                if is_clean_wav(data):
                    continue
                try:
                    clean = clean_audio(data, f"{model.__name__} {row.pk}")
                except AudioRejected as rejected:
                    self.stderr.write(f"skipped: {rejected.reason}")
                    failed += 1
                    continue
                new_key = save_media(new_media_key(kind, "wav"), clean.wav_bytes)
                with transaction.atomic():
                    updated = model.objects.filter(pk=row.pk, **{field: old_key}).update(**{field: new_key})
                if not updated:  # re-imported meanwhile: the new file is not needed
                    delete_media(new_key)
                    continue
                if options["delete_originals"]:
                    delete_media(old_key)
                cleaned += 1
            self.stdout.write(f"{model.__name__}: {cleaned} re-encoded, {failed} could not be read")
