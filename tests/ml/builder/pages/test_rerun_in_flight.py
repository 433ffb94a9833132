"""While a re-run is in flight nothing is drawn or exported, and the re-run voids the open checks of
the samples it redoes: a sample waiting to be judged again is not finished."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from ml.builder.export_versions import BuildExport, BuildInFlight, start_export
from ml.builder.models import BuildSample, SpotCheck
from ml.builder.pages.queue import Decision, decide, draw_spot_checks
from ml.builder.runner import rerun_from
from tests.ml.builder.pages.spotcheck_builds import finished_build, taken
from webapp.jobs import run_job

pytestmark = pytest.mark.django_db


def test_a_rerun_voids_open_checks_and_refuses_draws_and_exports_until_it_finishes(
    queued_here, client_for, users, settings, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path / "var"
    # given a finished build with four open spot-checks, one of them decided, and an export queued
    build = finished_build(single=6)
    draw_spot_checks(build, count=4)
    annotator = users["annotator"]
    decided = decide(taken(annotator, build), annotator, Decision("keep"))
    queued_export = start_export(build, "asked for before the re-run")
    assert BuildSample.objects.filter(build=build).finished().count() == 6

    # when the response filter re-runs for every sample
    rerun_from(build, "response_filter", {"response_min_score": 5})

    # then no sample counts as finished until it is judged again, the open checks are void and the
    # decided one stays, as the provenance says
    assert BuildSample.objects.filter(build=build).finished().count() == 0
    assert list(SpotCheck.objects.filter(build=build).in_use()) == [decided]  # the void ones archived
    build.refresh_from_db()
    assert build.provenance["tightenings"][-1]["voided_spot_checks"] == 3
    # and drawing and exporting are refused, in words
    with pytest.raises(BuildInFlight, match="re-run is in flight"):
        draw_spot_checks(build, count=2)
    with pytest.raises(BuildInFlight, match="re-run is in flight"):
        start_export(build, "too early")
    # and the export queued before the re-run is not written when its job runs now
    assert queued_export.job is not None
    run_job(queued_export.job.pk)
    queued_export.refresh_from_db()
    assert queued_export.finished_at is None and not Path(queued_export.path).exists()

    # and the build page says why and writes nothing when asked
    admin = client_for("admin")
    page = admin.get(reverse("ml:builder:build", args=[build.pk])).content.decode()
    assert "No export or draw now" in page
    response = admin.post(reverse("ml:builder:export", args=[build.pk]), follow=True)
    assert "Not exported: the build is running" in response.content.decode()
    assert BuildExport.objects.filter(build=build).count() == 1


def test_the_build_page_writes_a_new_export_version(  # who may: test_spotcheck_access.py
    queued_here, client_for, users, settings, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path / "var"
    build = finished_build(single=2)

    response = client_for("admin").post(reverse("ml:builder:export", args=[build.pk]), follow=True)

    export = BuildExport.objects.get(build=build)
    assert (export.version, export.created_by) == (1, users["admin"])
    assert "Writing export v1" in response.content.decode()
    assert export.job is not None
    run_job(export.job.pk)
    page = client_for("admin").get(reverse("ml:builder:build", args=[build.pk])).content.decode()
    assert 'data-version="1"' in page and Path(export.path, "records.jsonl").is_file()
