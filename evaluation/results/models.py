"""Judge audits: one judge configuration probed for consistency, bias and agreement (a job)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evaluation.judging.models import JudgeConfig


class JudgeAudit(models.Model):
    """An audit of one judge configuration on a benchmark version's outputs; figures in its job's result."""

    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.CASCADE, related_name="audits")
    benchmark_version = models.CharField(max_length=64)
    repeats = models.PositiveSmallIntegerField(default=3, help_text="k: how often each prompt is judged")
    max_outputs = models.PositiveIntegerField(default=30, help_text="Outputs audited (human-scored first)")
    compare_with = models.ManyToManyField(
        JudgeConfig, blank=True, related_name="+", help_text="Other judges for inter-judge agreement"
    )
    job = models.OneToOneField(
        "webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_audit"
    )
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"audit {self.pk} of {self.judge_config_id} on {self.benchmark_version}"
