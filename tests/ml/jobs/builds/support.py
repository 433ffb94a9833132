"""A finished EchoDialogue build exported as training records, for the jobs that train on one."""

from __future__ import annotations

from pathlib import Path

from ml.builder.export import export_build
from ml.builder.export_versions import BuildExport
from ml.builder.models import Build
from tests.ml.builder.pages.spotcheck_builds import finished_build


def write_version(build: Build, folder: Path) -> BuildExport:
    """Write the build's next export version into `folder`, in this process (no job)."""
    version = BuildExport.objects.filter(build=build).count() + 1
    export = BuildExport.objects.create(build=build, version=version, path=str(folder), reason="test")
    export_build(build, version=export)
    export.refresh_from_db()
    return export


def exported_build(folder: Path, single: int = 4, name: str = "EchoDialogue export") -> Build:
    """Return a finished build of `single` voiced samples, exported into `folder`."""
    build = finished_build(name=name, single=single, audio=True)
    write_version(build, folder)
    build.refresh_from_db()
    return build
