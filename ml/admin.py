from django.contrib import admin

from ml.jobs.models import Checkpoint, DatasetSnapshot, OutputRewardScore


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "uri", "arch", "produced_by", "created_at")
    list_filter = ("kind",)
    search_fields = ("name", "uri")
    readonly_fields = ("metadata", "produced_by", "dataset_snapshot", "created_at")
    raw_id_fields = ("parent",)


@admin.register(DatasetSnapshot)
class DatasetSnapshotAdmin(admin.ModelAdmin):
    list_display = ("id", "purpose", "splits", "size", "content_hash", "job", "created_at")
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
        "created_at",
    )


@admin.register(OutputRewardScore)
class OutputRewardScoreAdmin(admin.ModelAdmin):
    list_display = ("output", "checkpoint", "content", "alignment", "audio", "created_at")
    list_filter = ("checkpoint", "audio")
    raw_id_fields = ("output", "job")
