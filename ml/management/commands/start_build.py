"""manage.py start_build NAME --config build.json --single 1000 --dialogues 10: start an EchoDialogue build.

The configuration file is ``ml.builder.config.BuildConfig`` as JSON (at least ``endpoints``); it is
checked before anything is stored, by the same code as the "Start a build" page
(``ml.builder.launch``). Workers (``celery -A webapp worker -Q default``) then run the stages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ml.builder.launch import BuildRefused, check_request, launch


class Command(BaseCommand):
    help = "Start an EchoDialogue build from a JSON configuration file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--config", type=Path, required=True, help="BuildConfig as JSON")
        parser.add_argument("--single", type=int, default=1000, help="single-turn samples")
        parser.add_argument("--dialogues", type=int, default=10, help="five-turn dialogues")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            text = options["config"].read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:
            raise CommandError(f"the configuration file cannot be read: {exc}") from exc
        # The same check as the "Start a build" page (ml.builder.launch): the same refusals.
        try:
            request = check_request(
                options["name"], text, options["single"], options["dialogues"], options["seed"]
            )
            build = launch(request)
        except BuildRefused as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"build {build.pk} started: its stages run on the Celery workers")
