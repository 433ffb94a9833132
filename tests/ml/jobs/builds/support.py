"""A finished EchoDialogue build exported as training records, for the jobs that train on one."""

from __future__ import annotations

from pathlib import Path

from ml.builder.export import export_build
from ml.builder.models import Build
from tests.ml.builder.pages.spotcheck_builds import finished_build


def exported_build(folder: Path, single: int = 4, name: str = "EchoDialogue export") -> Build:
    """Return a finished build of `single` voiced samples, exported into `folder`."""
    build = finished_build(name=name, single=single, audio=True)
    export_build(build, folder)
    build.refresh_from_db()
    return build
