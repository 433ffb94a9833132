"""Adjudicated gold references: one versioned reference per item, the newest current."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.labelling.models import Annotation
from annotation.recording.models import Item


class GoldReference(models.Model):
    """The adjudicated reference for an item; versioned, the newest is current."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="gold_references")
    version = models.PositiveIntegerField()
    perception = models.JSONField(default=dict)
    tom = models.JSONField(default=dict)
    reference_response = models.TextField(blank=True, help_text="An empathetic reference reply, if any")
    adjudicated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    fast_tracked = models.BooleanField(default=False)
    imported = models.BooleanField(
        default=False, help_text="Came from an imported dataset, not adjudicated here"
    )
    note = models.TextField(blank=True, help_text="The lead's reasoning, for later readers")
    source_annotations = models.ManyToManyField(Annotation, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    is_current = models.BooleanField(default=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "version"], name="gold_version_unique"),
            models.UniqueConstraint(
                fields=["item"], condition=models.Q(is_current=True), name="one_current_gold_per_item"
            ),
        ]
        ordering = ["item", "-version"]

    def __str__(self) -> str:
        return f"gold v{self.version} of {self.item_id}"
