"""Load the demo: users for every role and 25 EchoEval items with synthetic speech. Safe to re-run."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from annotation.demo.labels import seed_demo_labels
from annotation.demo.recording import seed_items, seed_users
from evaluation.outputs.demo import seed_demo_outputs


class Command(BaseCommand):
    help = "Create demo users (passwords printed once) and 25 demo items with eSpeak NG speech."

    def handle(self, *args: Any, **options: Any) -> None:
        created = seed_users()
        count = seed_items(lambda fraction, message: self.stdout.write(f"  {fraction:4.0%} {message}"))
        gold = seed_demo_labels()
        outputs = seed_demo_outputs()
        self.stdout.write(
            self.style.SUCCESS(f"Demo ready: {count} items, {gold} with gold, {outputs} model outputs.")
        )
        if created:
            self.stdout.write("Demo logins (shown only this once; reset with `manage.py changepassword`):")
            for username, password in created.items():
                self.stdout.write(f"  {username:<12} {password}")
        else:
            self.stdout.write("Demo users already existed; their passwords are unchanged.")
