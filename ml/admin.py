"""Django admin for EchoChat's records: checkpoints, dataset snapshots, reward scores.

Who may use these pages is ``ml.jobs.access.ML_ROLES``, as for the training pages.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from ml.builder import admin as builder_admin  # noqa: F401  (registers the builder's admin pages)
from ml.jobs.access import ML_ROLES
from ml.jobs.models import Checkpoint, DatasetSnapshot, OutputRewardScore
from webapp.roles import RoleAdminAccess


@admin.register(Checkpoint)
class CheckpointAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = ML_ROLES
    list_display = ("name", "kind", "uri", "arch", "produced_by", "created_at")
    list_filter = ("kind",)
    search_fields = ("name", "uri")
    readonly_fields = ("metadata", "produced_by", "dataset_snapshot", "created_at")
    raw_id_fields = ("parent",)


@admin.register(DatasetSnapshot)
class DatasetSnapshotAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = ML_ROLES
    list_display = ("id", "purpose", "splits", "build", "size", "content_hash", "job", "created_at")
    list_filter = ("purpose",)
    # A snapshot is the record of what a job trained on: it is read, never edited.
    readonly_fields = (
        "purpose",
        "splits",
        "entries",
        "item_ids",
        "gold_reference_ids",
        "content_hash",
        "excluded",
        "job",
        "build",
        "created_at",
    )

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        # Only launching a job takes a snapshot: one added here would describe no job's data.
        return False


@admin.register(OutputRewardScore)
class OutputRewardScoreAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = ML_ROLES
    list_display = ("output", "checkpoint", "content", "alignment", "audio", "created_at")
    list_filter = ("checkpoint", "audio")
    raw_id_fields = ("output", "job")
