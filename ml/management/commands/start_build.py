"""manage.py start_build NAME --config build.json --single 1000 --dialogues 10: start an EchoDialogue build.

The configuration file is ``ml.builder.config.BuildConfig`` as JSON (at least ``endpoints``); it is
checked before anything is stored. Workers (``celery -A webapp worker -Q default``) then run the stages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ml.builder.config import BuildConfig, ConfigProblem
from ml.builder.models import Build
from ml.builder.runner import start_build
from webapp.outbound import endpoint_problems


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
            raw = json.loads(options["config"].read_text(encoding="utf-8"))
            config = BuildConfig.from_json(raw)
        except ConfigProblem as exc:
            raise CommandError(str(exc)) from exc
        except (OSError, ValueError) as exc:
            raise CommandError(f"the configuration file cannot be read: {exc}") from exc
        if problems := endpoint_problems(config.outbound_endpoints()):
            raise CommandError("; ".join(problems))
        if min(options["single"], options["dialogues"]) < 0:
            raise CommandError("counts cannot be negative")
        if Build.objects.filter(name=options["name"]).exists():
            raise CommandError(f"a build named {options['name']!r} exists already")
        build = Build.objects.create(
            name=options["name"],
            single_turn_count=options["single"],
            dialogue_count=options["dialogues"],
            seed=options["seed"],
            config=config.to_json(),
        )
        start_build(build)
        self.stdout.write(f"build {build.pk} started: its stages run on the Celery workers")
