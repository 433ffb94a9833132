"""Import a system's outputs from a JSONL file and an audio zip, folder or S3 prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.outputs.audio_sources import (
    AudioSource,
    AudioSourceRefused,
    DirectoryAudioSource,
    S3AudioSource,
    ZipAudioSource,
)
from evaluation.outputs.harnesses import ECHOSTUDIO, FORMAT_CHOICES
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, System


class Command(BaseCommand):
    help = "Validate a JSONL of outputs (and their response audio) and replace the system's outputs with it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("system", help="System name (created when --create is given)")
        parser.add_argument("rows", type=Path, help="JSONL file, one output per line")
        parser.add_argument(
            "--benchmark-version", default=DEFAULT_BENCHMARK_VERSION, help="Benchmark version"
        )
        parser.add_argument(
            "--audio", help="A zip file, a folder, or an s3://bucket/prefix/ of response audio"
        )
        parser.add_argument("--create", action="store_true", help="Register the system if it does not exist")
        parser.add_argument(
            "--text-only", action="store_true", help="With --create: the system has no speech"
        )
        parser.add_argument(
            "--skip-invalid-rows", action="store_true", help="Import valid rows despite problems"
        )
        parser.add_argument(
            "--format",
            choices=[name for name, _ in FORMAT_CHOICES],
            default=ECHOSTUDIO,
            help="A harness's result file as written (voicebench, urobench, audiobench)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        system = System.objects.filter(name=options["system"]).first()
        if system is None:
            if not options["create"]:
                raise CommandError(f"No system named {options['system']!r} (use --create to register it)")
            system = System.objects.create(name=options["system"], text_only=options["text_only"])
        report = import_outputs(
            system,
            options["benchmark_version"],
            options["rows"].read_bytes(),
            _audio_source(options["audio"]),
            skip_invalid_rows=options["skip_invalid_rows"],
            format_name=options["format"],
        )
        for problem in report.errors:
            self.stderr.write(f"error: {problem}")
        for problem in report.warnings:
            self.stderr.write(f"warning: {problem}")
        if not report.imported:
            raise CommandError(f"Nothing imported: {len(report.errors)} problem(s) in {report.rows} row(s)")
        self.stdout.write(
            f"{system.name} ({options['benchmark_version']}): {report.created} new, {report.updated} changed, "
            f"{report.unchanged} unchanged, {report.removed} removed, {report.skipped} skipped"
        )


def _audio_source(location: str | None) -> AudioSource | None:
    if not location:
        return None
    try:
        if location.startswith("s3://"):
            return S3AudioSource(location)
        path = Path(location)
        if path.is_dir():
            return DirectoryAudioSource(path)
        if path.is_file():
            return ZipAudioSource(path)
    except AudioSourceRefused as refused:
        raise CommandError(str(refused)) from None
    raise CommandError(f"No audio at {location}")
