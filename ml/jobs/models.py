"""What the gpu-queue jobs record: the data they trained on, the checkpoints they made, the scores they gave."""

from __future__ import annotations

from django.db import models


class DatasetSnapshot(models.Model):
    """The exact rows a job used: which items, which accepted take of each, which gold reference.

    Taken when the job is started, so a job that runs later (or is re-run after a worker died)
    trains on what the admin saw, whatever gold has been adjudicated since. Entries are
    {"item": pk, "external_id": str, "take": pk, "gold": pk or null}; gold is null for inference.
    """

    class Purpose(models.TextChoices):
        SFT = "sft", "SFT"
        RL = "rl", "RL"
        REWARD = "reward", "Reward-model training"
        INFERENCE = "inference", "Inference"

    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    splits = models.JSONField(default=list)
    entries = models.JSONField(default=list)
    item_ids = models.JSONField(default=list, help_text="Item primary keys, in entry order")
    gold_reference_ids = models.JSONField(default=list, help_text="GoldReference primary keys used")
    content_hash = models.CharField(
        max_length=64, db_index=True, help_text="sha256 of the entries: equal hashes, equal data"
    )
    excluded = models.JSONField(
        default=dict, blank=True, help_text="Why eligible-looking items were left out, with counts"
    )
    job = models.ForeignKey(
        "webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="dataset_snapshots"
    )
    # A snapshot of a finished EchoDialogue build's export instead of annotated items: entries are
    # {"external_id": str} per record, the hash is the records file's (``ml.jobs.builds.sources``).
    # Protected: a build a job trained on stays, as its provenance.
    build = models.ForeignKey(
        "ml.Build", null=True, blank=True, on_delete=models.PROTECT, related_name="dataset_snapshots"
    )
    # The export version of the build the job read (``build-N/vK/``), never rewritten after.
    build_export = models.ForeignKey(
        "ml.BuildExport", null=True, blank=True, on_delete=models.PROTECT, related_name="dataset_snapshots"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        source = f"build #{self.build_id}" if self.build_id else f"{len(self.item_ids)} items"
        if self.build_export is not None:
            source += f" {self.build_export.label}"
        return f"{self.get_purpose_display()} snapshot #{self.pk} ({source})"

    @property
    def size(self) -> int:
        """Return how many items the snapshot holds."""
        return len(self.entries)


class Checkpoint(models.Model):
    """A model stored at a local path or S3 prefix, with the metadata.json written beside its weights."""

    class Kind(models.TextChoices):
        BASE = "base", "Base model"
        SFT = "sft", "SFT + AAA"
        RL = "rl", "RL + SDCA"
        REWARD = "reward", "Reward model"

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, db_index=True)
    uri = models.CharField(max_length=500, help_text="Local directory or s3://bucket/prefix")
    arch = models.CharField(max_length=64, blank=True)
    base_model = models.CharField(
        max_length=500, blank=True, help_text="For a LoRA adapter: where its base weights are"
    )
    metadata = models.JSONField(default=dict, blank=True, help_text="The checkpoint's metadata.json")
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="children",
        help_text="The checkpoint training started from",
    )
    produced_by = models.ForeignKey(
        "webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="checkpoints"
    )
    dataset_snapshot = models.ForeignKey(
        DatasetSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="checkpoints"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def metrics(self) -> dict[str, object]:
        """Return the final metrics stored in the metadata."""
        value = self.metadata.get("metrics", {})
        return value if isinstance(value, dict) else {}

    @property
    def provenance(self) -> dict[str, str]:
        """Return what wrote it (project commit, torch, transformers, peft), as its metadata.json says."""
        value = self.metadata.get("provenance", {})
        return value if isinstance(value, dict) else {}


class OutputRewardScore(models.Model):
    """The reward model's verdict on one model output: content in [0, 5], audio alignment in [0, 1]."""

    class Audio(models.TextChoices):
        OWN = "own", "The system's response audio"
        SYNTHESIZED = "synthesized", "Synthesised in the declared speech style"

    output = models.ForeignKey(
        "evaluation.ModelOutput", on_delete=models.CASCADE, related_name="reward_scores"
    )
    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.CASCADE, related_name="scores")
    content = models.FloatField()
    alignment = models.FloatField()
    audio = models.CharField(max_length=16, choices=Audio.choices)
    job = models.ForeignKey("webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["output", "checkpoint"], name="one_reward_score_per_checkpoint")
        ]
        ordering = ["output", "-created_at"]

    def __str__(self) -> str:
        return f"reward {self.content:.2f}/{self.alignment:.2f} for {self.output_id}"
