"""`manage.py export_dialogues [FILE]`: write every dialogue as JSONL (the import's own shape)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotation.dialogues.transfer import export_dialogues


class Command(BaseCommand):
    help = "Export dialogues as JSONL, one per line; the file imports back unchanged."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, nargs="?", help="where to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path | None = options["file"]
        out = path.open("w", encoding="utf-8") if path else sys.stdout
        try:
            out.writelines(export_dialogues())
        finally:
            if path:
                out.close()
