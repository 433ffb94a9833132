"""Load the demo: users for every role and 25 EchoEval items with synthetic speech. Safe to re-run.

Each app seeds its own part through a `seed_demo(progress)` method on its AppConfig, called in
INSTALLED_APPS order (which is pipeline order: recordings and labels before model outputs), so this
project-level command imports no app.
"""

from __future__ import annotations

import time
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Create demo users (passwords printed once), 25 demo items and 3 five-turn dialogues with "
        "eSpeak NG speech, gold and two systems' replies."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        # Each line as it happens (make run shows them while the site is not up yet), with the time
        # so far: a first run speaks every item, dialogue turn and reply with eSpeak NG.
        self.stdout.write(
            "Seeding the demo: a first run takes about 2-3 minutes (25 items, 3 dialogues and two "
            "systems' replies spoken by eSpeak NG); a later run, only seconds."
        )
        self.stdout.flush()

        def progress(fraction: float, message: str) -> None:
            self.stdout.write(f"  [{time.monotonic() - started:4.0f} s] {fraction:4.0%} {message}")
            self.stdout.flush()

        seeded: dict[str, Any] = {}
        for config in apps.get_app_configs():
            seed = getattr(config, "seed_demo", None)
            if callable(seed):
                progress(0.0, f"{config.verbose_name}: seeding")
                seeded.update(seed(progress))
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo ready: {seeded.get('items', 0)} items, {seeded.get('gold', 0)} with gold, "
                f"{seeded.get('dialogues', 0)} five-turn dialogues ({seeded.get('dialogue_gold', 0)} turns "
                f"with gold), {seeded.get('outputs', 0)} model outputs, in "
                f"{time.monotonic() - started:.0f} s."
            )
        )
        logins: dict[str, str] = seeded.get("logins", {})
        if logins:
            self.stdout.write("Demo logins (shown only this once; reset with `manage.py changepassword`):")
            for username, password in logins.items():
                self.stdout.write(f"  {username:<12} {password}")
        else:
            self.stdout.write("Demo users already existed; their passwords are unchanged.")
