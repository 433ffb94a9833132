"""A build's exports as numbered versions: ``build-N/v1/``, ``v2/``, ... each written once, never
overwritten, so a training job keeps reading the records it was started on.

A new version is written when the pipeline finishes (or a re-run does), when a spot-check round is
complete (the last open check of the build is decided), and when an admin asks from the build page;
each version's manifest names the spot-check decisions and re-runs it includes.

The races it prevents: an export while a re-run is in flight would write records from samples
half re-judged, so ``export_refusal`` refuses it (and the spot-check draw, ``pages.queue``) until
the build is finished again; two exports started at once get different numbers, as the build row
is locked while the next number is taken.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models, transaction

from ml.builder.models import Build, BuildStatus
from webapp.jobs import start_job
from webapp.models import User


class BuildExport(models.Model):
    """One export version of a build: its folder, when it was written and what it includes.

    ``counts`` are the export's (records, dialogues, fixes); ``decisions`` = {"keep": n, "fix": n,
    "drop": n} of the spot-check decisions laid over it; ``reruns`` = how many re-runs (the
    provenance's ``tightenings``) it includes. ``finished_at`` is empty while it is being written.
    """

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="exports")
    version = models.PositiveIntegerField()
    path = models.CharField(max_length=500)
    reason = models.CharField(max_length=200, blank=True, help_text="Why this version was written")
    job = models.ForeignKey("webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    counts = models.JSONField(default=dict, blank=True)
    decisions = models.JSONField(default=dict, blank=True)
    reruns = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "ml"
        ordering = ["build", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["build", "version"], name="one_export_version_per_build")
        ]

    def __str__(self) -> str:
        return f"build #{self.build_id} v{self.version}"

    @property
    def label(self) -> str:
        """Return the version as people name it ("v3")."""
        return f"v{self.version}"


def version_folder(build: Build, version: int) -> Path:
    """Return the folder of one export version (under the var folder)."""
    return Path(settings.VAR_DIR) / "builds" / f"build-{build.pk}" / f"v{version}"


def in_flight_refusal(build: Build) -> str:
    """Return why the build's samples cannot be drawn or exported now (a stage or re-run is running,
    or it stopped short), or "" when they can."""
    status = Build.objects.values_list("status", flat=True).get(pk=build.pk)
    if status == BuildStatus.SUCCEEDED:
        return ""
    if status == BuildStatus.RUNNING:
        return "the build is running (a stage or a re-run is in flight); wait until it has finished"
    return f"the build is {BuildStatus(status).label.lower()}, not finished; resume it first"


class BuildInFlight(ValueError):
    """The build is not finished (a stage or re-run is in flight): no draw, no export; the reason in words."""


def start_export(build: Build, reason: str, user: User | None = None) -> BuildExport:
    """Number the next export version and start the job that writes it; raise BuildInFlight when the
    build is not finished."""
    with transaction.atomic():
        Build.objects.select_for_update().get(pk=build.pk)
        refusal = in_flight_refusal(build)
        if refusal:
            raise BuildInFlight(refusal)
        last = BuildExport.objects.filter(build=build).aggregate(last=models.Max("version"))["last"] or 0
        export = BuildExport.objects.create(
            build=build,
            version=last + 1,
            path=str(version_folder(build, last + 1)),
            reason=reason[:200],
            created_by=user,
        )
        export.job = start_job(
            "builder_export", parameters={"build": build.pk, "export": export.pk}, started_by=user
        )
        export.save(update_fields=["job"])
    return export


def latest_export(build: Build) -> BuildExport | None:
    """Return the newest export version that was written completely."""
    return BuildExport.objects.filter(build=build, finished_at__isnull=False).order_by("-version").first()
