"""What the EchoDialogue builder stores: the topic taxonomy, builds, their samples, per-sample stage
state, the LLM answers it paid for, and the human spot-checks of a build's samples.

Design (one build, many workers, any of which may die):

- ``Build`` holds the configuration (LLM endpoints, counts, thresholds, seed) and one
  ``BuildStage`` row per stage (status, the Job that runs it, summary counts and cost).
- ``BuildSample`` is one user turn with everything the stages add to it (query, audio keys,
  consistency verdict, perception and ToM in the workbench label-document format
  (``annotation.labelling.schema``), the raw reasoning+response output, response audio key).
  Dialogue turns are samples with a ``BuildDialogue`` (trajectory, session voice) and ``turn``.
- ``SampleStage`` is the per-sample, per-stage state row: pending -> running (claimed by one job
  attempt) -> done with an outcome (kept or dropped, reason, detail) and the cost of that sample.
  Claims are conditional UPDATEs over ``SELECT ... FOR UPDATE SKIP LOCKED`` (``ml.builder.claims``);
  results are written only where the row is still claimed by the same attempt, so a sample is
  finished once per stage even when a worker dies and its job is re-run. A dialogue is claimed
  through its first turn's row ("head") and processed turn by turn, since turns need the history.
  Stage counts (made, kept, dropped by reason) are aggregates of these rows, never counters, so a
  re-run cannot count twice.
- ``BuildLlmCall`` stores each LLM answer under the sha256 of (model, messages, temperature) as
  soon as it arrives: a re-run of a claimed batch pays only for prompts that were in flight.
- ``SpotCheck``: a sampled ``BuildSample`` for one annotator: keep / fix / drop (see the class).
- Which samples are finished: ``BuildSample.objects.finished()``, the one rule for every reader.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from ml.builder.config import BuildConfig, ConfigProblem
from ml.builder.stages import (
    PROMPT_VARIANTS,
    SAMPLE_STAGES,
    SPOT_CHECK_VERDICTS,
    STAGE_TITLES,
    STAGES,
)
from webapp.lib.output_format import SPEECH_STYLES
from webapp.lib.vocabulary import EMOTIONS, INTENSITIES, choice
from webapp.models import Archivable, ArchivableQuerySet
from webapp.outbound import endpoint_problems

STAGE_CHOICES = [(stage, STAGE_TITLES[stage]) for stage in STAGES]
SAMPLE_STAGE_CHOICES = [(stage, STAGE_TITLES[stage]) for stage in SAMPLE_STAGES]


class TaxonomyDomain(models.Model):
    """A top-level domain of the topic taxonomy (the paper has five)."""

    name = models.CharField(max_length=120, unique=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TaxonomySubcategory(models.Model):
    domain = models.ForeignKey(TaxonomyDomain, on_delete=models.CASCADE, related_name="subcategories")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["domain__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["domain", "name"], name="one_subcategory_name_per_domain")
        ]
        verbose_name_plural = "taxonomy subcategories"

    def __str__(self) -> str:
        return f"{self.domain.name} / {self.name}"


class TaxonomyTopic(models.Model):
    """A topic a query is written about; retired topics stay for the samples that used them."""

    subcategory = models.ForeignKey(TaxonomySubcategory, on_delete=models.CASCADE, related_name="topics")
    name = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["subcategory__domain__name", "subcategory__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["subcategory", "name"], name="one_topic_name_per_subcategory")
        ]

    def __str__(self) -> str:
        return f"{self.subcategory} / {self.name}"

    @property
    def path(self) -> str:
        """Return "domain / subcategory / topic"."""
        return str(self)


class BuildStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Finished"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Build(models.Model):
    """One EchoDialogue-style dataset being made.

    ``config`` (checked by ``ml.builder.config.BuildConfig``): endpoints [{base_url, model,
    api_key_env, max_concurrency}], emotions, intensities, variants, thresholds, TTS settings,
    batch size, spot-check rate. ``provenance`` is filled as stages run: stage versions, model
    names, prompt hashes, TTS and classifier descriptions; the export copies it.
    """

    name = models.CharField(max_length=200, unique=True)
    status = models.CharField(max_length=16, choices=BuildStatus.choices, default=BuildStatus.DRAFT)
    single_turn_count = models.PositiveIntegerField(default=0)
    dialogue_count = models.PositiveIntegerField(default=0)
    turns_per_dialogue = models.PositiveSmallIntegerField(default=5)
    seed = models.PositiveIntegerField(default=0)
    config = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    export_path = models.CharField(max_length=500, blank=True, help_text="Folder of the last export")
    exported_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        try:
            config = BuildConfig.from_json(self.config)
        except ConfigProblem:
            return  # what else is wrong with a configuration is its own check's to say
        if problems := endpoint_problems(config.outbound_endpoints()):
            raise ValidationError({"config": problems})

    def stage(self, name: str) -> BuildStage:
        """Return this build's row for one stage."""
        return self.stages.get(stage=name)


class StageStatus(models.TextChoices):
    PENDING = "pending", "Waiting"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class BuildStage(models.Model):
    """One stage of one build: where it stands, which job runs it, and its summary.

    ``counts`` = {"made": n, "kept": n, "dropped": n, "reasons": {reason: n}} and ``cost`` =
    {"llm_calls", "prompt_tokens", "completion_tokens", "seconds", "samples_per_second"} are
    refreshed from the ``SampleStage`` rows (never incremented), so they are right after any re-run.
    ``settings`` holds the stage's thresholds as run (an admin may tighten them and re-run).
    """

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="stages")
    stage = models.CharField(max_length=32, choices=STAGE_CHOICES)
    status = models.CharField(max_length=16, choices=StageStatus.choices, default=StageStatus.PENDING)
    version = models.CharField(max_length=64, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    job = models.ForeignKey("webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    counts = models.JSONField(default=dict, blank=True)
    cost = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["build", "id"]
        constraints = [models.UniqueConstraint(fields=["build", "stage"], name="one_row_per_build_stage")]

    def __str__(self) -> str:
        return f"{self.build} · {self.get_stage_display()}"

    @property
    def order(self) -> int:
        """Return the stage's position in the pipeline (0 for planning)."""
        return STAGES.index(self.stage)


class BuildDialogue(models.Model):
    """A planned five-turn dialogue: its topic, session voice and emotional trajectory.

    ``trajectory`` = [{"turn": 1, "emotion": str, "intensity": str, "strategy": str, "beat": str}, ...]
    (``ml.builder.trajectory``); ``voice`` = the TTS voice every turn of the session reuses.
    """

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="dialogues")
    external_id = models.CharField(max_length=64)
    topic = models.ForeignKey(
        TaxonomyTopic, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    topic_path = models.CharField(max_length=600, blank=True, help_text="The topic as it read when planned")
    prompt_variant = models.CharField(max_length=32, choices=[(v, v) for v in PROMPT_VARIANTS])
    trajectory = models.JSONField(default=list, blank=True)
    trajectory_model = models.CharField(max_length=200, blank=True)
    voice = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["build", "id"]
        constraints = [
            models.UniqueConstraint(fields=["build", "external_id"], name="one_dialogue_id_per_build")
        ]

    def __str__(self) -> str:
        return self.external_id


class SampleStatus(models.TextChoices):
    ACTIVE = "active", "In the pipeline"
    DROPPED = "dropped", "Dropped"


class BuildSampleQuerySet(models.QuerySet["BuildSample"]):
    def finished(self) -> BuildSampleQuerySet:
        """Return the samples that passed every stage: active, with a kept row for the last one
        (a re-run deletes the rows it redoes, so a sample waiting to be re-judged is not finished)."""
        # An outcome is written only when the row is done.
        kept_last = models.Q(stage_rows__stage=SAMPLE_STAGES[-1], stage_rows__outcome="kept")
        return self.filter(kept_last, status=SampleStatus.ACTIVE).exclude(response_audio_key="")


class BuildSample(models.Model):
    """One user turn of a build and what each stage made of it.

    Single-turn samples have ``dialogue=None`` and ``turn=0``; dialogue turns count from 1.
    ``voice`` = {"backend", "voice", "rate_wpm", "pitch"}; ``consistency`` = {"method", "predicted",
    "confidence", "consistent", "scores", "baseline": the neutral reading's features};
    ``features`` = acoustic scalar features, phones per second, pauses and aligned words;
    ``speech`` = {"phones_per_second", "neutral_phones_per_second", "rate_ratio", "rate_level",
    "pauses", "stress": {"asked", "detected", "agrees"}, "speaker_similarity"} (perception stage);
    ``perception`` / ``tom`` follow ``annotation.labelling.schema``; ``output`` is the full
    reasoning + response text in ``webapp.lib.output_format``; ``models`` = {stage: model name}.
    """

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="samples")
    external_id = models.CharField(max_length=80)
    dialogue = models.ForeignKey(
        BuildDialogue, null=True, blank=True, on_delete=models.CASCADE, related_name="turns"
    )
    turn = models.PositiveSmallIntegerField(default=0)
    topic = models.ForeignKey(
        TaxonomyTopic, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    topic_path = models.CharField(max_length=600, blank=True)
    emotion = models.CharField(max_length=16, choices=[choice(e) for e in EMOTIONS])
    emotion_variant = models.CharField(max_length=64, blank=True)
    intensity = models.CharField(max_length=8, choices=[choice(i) for i in INTENSITIES])
    prompt_variant = models.CharField(max_length=32, choices=[(v, v) for v in PROMPT_VARIANTS])
    status = models.CharField(max_length=16, choices=SampleStatus.choices, default=SampleStatus.ACTIVE)
    dropped_at = models.CharField(max_length=32, blank=True, choices=SAMPLE_STAGE_CHOICES)
    drop_reason = models.CharField(max_length=64, blank=True)

    text = models.TextField(blank=True, help_text="The user's query")
    stressed_word = models.CharField(
        max_length=64, blank=True, help_text="The word of the query its writer stressed; voiced with emphasis"
    )
    voice = models.JSONField(default=dict, blank=True)
    user_audio_key = models.CharField(max_length=300, blank=True)
    audio_seconds = models.FloatField(null=True, blank=True)
    consistency = models.JSONField(default=dict, blank=True)
    features = models.JSONField(default=dict, blank=True)
    perception = models.JSONField(default=dict, blank=True)
    speech = models.JSONField(
        default=dict, blank=True, help_text="What the speech models heard (ml.builder.logic.speech_checks)"
    )
    tom = models.JSONField(default=dict, blank=True)
    strategies = models.JSONField(default=list, blank=True)
    speech_style = models.CharField(max_length=16, blank=True, choices=[(s, s) for s in SPEECH_STYLES])
    output = models.TextField(blank=True, help_text="Reasoning and response in the EchoChat output format")
    response = models.TextField(blank=True)
    response_audio_key = models.CharField(max_length=300, blank=True)
    models_used = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    objects = BuildSampleQuerySet.as_manager()

    class Meta:
        ordering = ["build", "id"]
        constraints = [
            models.UniqueConstraint(fields=["build", "external_id"], name="one_sample_id_per_build")
        ]
        indexes = [models.Index(fields=["build", "status"]), models.Index(fields=["dialogue", "turn"])]

    def __str__(self) -> str:
        return self.external_id

    @property
    def is_dialogue_turn(self) -> bool:
        """Return True for a turn of a multi-turn dialogue."""
        return self.dialogue_id is not None


class SampleStageStatus(models.TextChoices):
    PENDING = "pending", "Waiting"
    RUNNING = "running", "Claimed"
    DONE = "done", "Done"


class Outcome(models.TextChoices):
    KEPT = "kept", "Kept"
    DROPPED = "dropped", "Dropped"


class SampleStage(models.Model):
    """One sample at one stage: claimed by one job attempt, finished once, with its outcome and cost.

    ``head`` marks the rows claims select: every single-turn sample, and the first turn of a
    dialogue (whose claimer processes all its turns in order). ``claims`` counts how often the
    row was claimed (more than once only when a worker died holding it).
    """

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="+")
    sample = models.ForeignKey(BuildSample, on_delete=models.CASCADE, related_name="stage_rows")
    stage = models.CharField(max_length=32, choices=SAMPLE_STAGE_CHOICES)
    head = models.BooleanField(default=True)
    status = models.CharField(
        max_length=16, choices=SampleStageStatus.choices, default=SampleStageStatus.PENDING
    )
    claimed_job = models.ForeignKey(
        "webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claimed_attempt = models.PositiveIntegerField(default=0)
    claims = models.PositiveIntegerField(default=0)
    outcome = models.CharField(max_length=16, blank=True, choices=Outcome.choices)
    reason = models.CharField(max_length=64, blank=True)
    detail = models.TextField(blank=True)
    version = models.CharField(max_length=64, blank=True)
    llm_calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["sample", "stage"], name="one_state_row_per_sample_stage")
        ]
        indexes = [models.Index(fields=["build", "stage", "status", "head"])]

    def __str__(self) -> str:
        return f"{self.sample} · {self.stage} · {self.status}"


class BuildLlmCall(models.Model):
    """One LLM answer a build paid for, kept so no prompt is paid for twice (and for provenance)."""

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="llm_calls")
    key = models.CharField(max_length=64, help_text="sha256 of model, messages and temperature")
    stage = models.CharField(max_length=32, choices=SAMPLE_STAGE_CHOICES)
    model = models.CharField(max_length=200)
    answer = models.TextField()
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["build", "key"], name="one_llm_answer_per_prompt")]

    def __str__(self) -> str:
        return f"{self.model} answer for {self.stage} ({self.key[:12]})"


class SpotCheckVerdict(models.TextChoices):
    KEEP = "keep", "Keep"
    FIX = "fix", "Fix"
    DROP = "drop", "Drop"


class SpotCheck(Archivable):
    """A human check of one sampled build sample: keep, fix (with corrected labels) or drop.

    ``reasons`` are ``stages.SPOT_CHECK_REASONS``; ``stage`` is the pipeline stage the problem is
    blamed on (blank for "keep"), which the build page turns into an acceptance rate per stage.
    ``perception`` / ``tom`` hold the corrected labels of a "fix" in the label-document format;
    ``response`` a corrected response (blank: unchanged). A dropped dialogue turn carries what
    its checker chose for the rest of the dialogue (``rest``: ``pages.rules.REST_TITLES``) and the
    turns explicitly kept by other checks that this choice removed, confirmed (``removed_kept``).
    """

    build = models.ForeignKey(Build, on_delete=models.PROTECT, related_name="spot_checks")
    sample = models.ForeignKey(BuildSample, on_delete=models.PROTECT, related_name="spot_checks")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    verdict = models.CharField(
        max_length=8, blank=True, choices=[(v, v.capitalize()) for v in SPOT_CHECK_VERDICTS]
    )
    reasons = models.JSONField(default=list, blank=True)
    stage = models.CharField(max_length=32, blank=True, choices=SAMPLE_STAGE_CHOICES)
    note = models.TextField(blank=True)
    perception = models.JSONField(default=dict, blank=True)
    tom = models.JSONField(default=dict, blank=True)
    response = models.TextField(blank=True)
    rest = models.CharField(
        max_length=16,
        blank=True,
        choices=[("cut", "Cut the dialogue before this turn"), ("dialogue", "Drop the whole dialogue")],
        help_text="A dropped dialogue turn: what happens to the rest of its dialogue",
    )
    removed_kept = models.JSONField(
        default=list, blank=True, help_text="Turns other checks kept that this drop removed, confirmed"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    objects = ArchivableQuerySet["SpotCheck"].as_manager()

    class Meta:
        ordering = ["build", "id"]
        # A voided check (its sample redone) is archived; the next draw may check the sample again.
        constraints = [
            models.UniqueConstraint(
                fields=["sample"],
                condition=models.Q(archived_at__isnull=True),
                name="one_spot_check_per_sample",
            )
        ]
        indexes = [models.Index(fields=["build", "annotator", "submitted_at"])]

    def __str__(self) -> str:
        return f"Spot-check of {self.sample} ({self.verdict or 'open'})"

    @property
    def is_submitted(self) -> bool:
        """Return True once the annotator gave a verdict."""
        return self.submitted_at is not None
