"""The codebase keeps the shape docs/architecture.md describes: small modules, small folders."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotation", "evaluation", "ml", "webapp", "tests", "bench")
MAX_MODULE_LINES = 400
MAX_MODULES_PER_FOLDER = 15


def _python_files() -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts and "__pycache__" not in path.parts
    ]


def report_long_modules() -> None:
    """The line and folder caps are a report, not a failure (issue #29): run this file with -rw."""
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in _python_files()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    if too_long:
        warnings.warn(f"modules over {MAX_MODULE_LINES} lines: {too_long}", stacklevel=1)


def test_layout_report() -> None:
    report_long_modules()
    modules = Counter(
        str(path.parent.relative_to(ROOT)) for path in _python_files() if path.name != "__init__.py"
    )
    crowded = {folder: count for folder, count in modules.items() if count > MAX_MODULES_PER_FOLDER}
    if crowded:
        warnings.warn(f"folders over {MAX_MODULES_PER_FOLDER} modules: {crowded}", stacklevel=1)
