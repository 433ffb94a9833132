"""Systems under evaluation and the outputs they produced for EchoEval items."""

from __future__ import annotations

import secrets
import uuid

from django.db import models

from annotation.recording.models import Item
from webapp.models import Archivable, ArchivableQuerySet

# The benchmark version every form, command and study starts from (the paper's EchoEval set).
DEFAULT_BENCHMARK_VERSION = "echoeval-v1"
_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def new_anonymous_code() -> str:
    """Return a random code such as 'SYS-7F3K' that people see instead of a system's name."""
    return "SYS-" + "".join(secrets.choice(_CODE_ALPHABET) for _ in range(4))


class System(models.Model):
    """A model under evaluation."""

    class Category(models.TextChoices):
        GENERAL = "general", "General speech LLM"
        EMPATHY = "empathy", "Empathy-focused"
        OMNI = "omni", "Omni model"
        OURS = "ours", "Ours"

    name = models.CharField(max_length=120, unique=True)
    category = models.CharField(max_length=16, choices=Category.choices, default=Category.GENERAL)
    version = models.CharField(max_length=200, blank=True, help_text="Version or checkpoint")
    anonymous_code = models.CharField(max_length=16, unique=True, default=new_anonymous_code, editable=False)
    text_only = models.BooleanField(default=False, help_text="Produces no response audio")
    # The voice the system is meant to speak in (a lab's reference recording or its TTS voice's
    # prompt): each reply's speaker similarity is measured against it (`audio_metrics`). Empty:
    # not measured.
    reference_voice_key = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ModelOutputQuerySet(ArchivableQuerySet["ModelOutput"]):
    def for_version(self, benchmark_version: str) -> ModelOutputQuerySet:
        """Return the outputs in use imported for one benchmark version (archived ones, or those of
        archived items, are left out of every judge run, study and leaderboard that starts here)."""
        return self.in_use("item").filter(benchmark_version=benchmark_version)

    def benchmark_versions(self) -> list[str]:
        """Return every benchmark version that has outputs, newest name last."""
        # order_by(): the default ordering (system, item) would otherwise join the DISTINCT.
        return sorted(self.order_by().values_list("benchmark_version", flat=True).distinct())


class ModelOutput(Archivable):
    """One system's answer to one item for one benchmark version (importing again replaces it)."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="outputs")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="model_outputs")
    benchmark_version = models.CharField(max_length=64, default=DEFAULT_BENCHMARK_VERSION, db_index=True)
    raw_text = models.TextField(blank=True, help_text="The output exactly as the system produced it")
    perception_text = models.TextField(blank=True)
    reasoning_text = models.TextField(blank=True)
    reasoning_fields = models.JSONField(default=dict, blank=True)
    strategy_text = models.TextField(blank=True)
    response_text = models.TextField(blank=True)
    structured = models.BooleanField(default=False, help_text="Parsed from EchoChat's <think> format")
    parse_problems = models.JSONField(default=list, blank=True)
    response_audio_key = models.CharField(max_length=200, blank=True)
    # A dialogue turn's history as the system heard it: {"source": "gold" | "own", "replies":
    # [{"turn": 1, "reply": ...}, ...]}, written by inference; the judge reads exactly this.
    # None: not known (an import without it), so the judge rebuilds it by the "own" rule.
    history = models.JSONField(null=True, blank=True, default=None)
    # The flag of a text that held characters no database stores (NUL, lone surrogates), in words;
    # they are escaped reversibly (`webapp.lib.stored_text.unescape` gives the model's text back).
    escaped_characters = models.CharField(
        max_length=200, blank=True, help_text="Characters of the text stored escaped; empty when none"
    )
    # A public harness's own scores of this output ({"voicebench.score": 4.0}), as its result file
    # gave them (`evaluation.outputs.harnesses`); shown beside EchoStudio's judgements, never mixed in.
    harness_metrics = models.JSONField(default=dict, blank=True)
    # Lets a re-import tell unchanged audio from new audio without re-reading stored files.
    response_audio_sha256 = models.CharField(max_length=64, blank=True)
    imported_at = models.DateTimeField(auto_now=True)

    objects = ModelOutputQuerySet.as_manager()

    class Meta:
        constraints = [
            # Archived outputs (removed by a re-import) stay beside the one in use.
            models.UniqueConstraint(
                fields=["system", "item", "benchmark_version"],
                condition=models.Q(archived_at__isnull=True),
                name="one_output_per_item",
            )
        ]
        ordering = ["system", "item"]

    def __str__(self) -> str:
        return f"{self.system_id}:{self.item_id}"


class OutputAudioMetrics(models.Model):
    """Objective measures of one output's response audio, with no judge or listener involved
    (`annotation.audio.speech.objective`): written by the measure_response_audio job, never by a
    request. `audio_key` is the audio measured: after a re-import with new audio the row is stale
    until the job measures it again, and figures leave it out."""

    output = models.OneToOneField(ModelOutput, on_delete=models.CASCADE, related_name="audio_metrics")
    audio_key = models.CharField(max_length=200)
    p808_mos = models.FloatField(null=True, blank=True, help_text="DNSMOS P.808 overall quality, 1-5")
    ovrl_mos = models.FloatField(null=True, blank=True, help_text="DNSMOS P.835 OVRL, 1-5")
    loudness_lufs = models.FloatField(null=True, blank=True, help_text="Integrated loudness (BS.1770)")
    true_peak_dbtp = models.FloatField(null=True, blank=True)
    phones_per_second = models.FloatField(null=True, blank=True, help_text="Over speech only")
    reply_wer = models.FloatField(
        null=True, blank=True, help_text="Word error rate of free ASR of the audio against the reply text"
    )
    speaker_similarity = models.FloatField(
        null=True, blank=True, help_text="Resemblyzer cosine similarity to the system's reference voice"
    )
    # The reference voice the similarity was measured against: a new reference makes the row stale.
    reference_voice_key = models.CharField(max_length=200, blank=True)
    problem = models.CharField(max_length=300, blank=True, help_text="Why the audio could not be measured")
    measured_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "output audio metrics"

    def __str__(self) -> str:
        return f"audio metrics of output {self.output_id}"
