"""Rubric judging: judge endpoints, judge runs, stored judgements, the judge answer cache, and
the same rubrics applied by hand by evaluators on a blind sample of outputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, Exists, OuterRef, Q

from evaluation.judging.heuristic import OFFLINE_HEURISTIC_MODEL
from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
)
from evaluation.outputs.models import ModelOutput, System
from webapp.lib.outbound import key_variable_problem
from webapp.lib.row_outcome import SUCCEEDED, RowTally, tally_of
from webapp.lib.url_shape import web_url_problem
from webapp.models import FINISHED_STATUSES, Archivable, ArchivableQuerySet, User
from webapp.outbound import (
    named_key,
    named_key_problem,
    outbound_policy,
    outbound_url_problem,
    settings_key,
)

if TYPE_CHECKING:
    from webapp.lib.llm_client import ChatJudgeConfig


class Stage(models.TextChoices):
    PERCEPTION = PERCEPTION, "Perception"
    SHIFT_PERCEPTION = SHIFT_PERCEPTION, "Shift perception"
    REASONING = REASONING, "Reasoning"
    RESPONSE_CONTENT = RESPONSE_CONTENT, "Response content"
    RESPONSE_AUDIO = RESPONSE_AUDIO, "Response audio"


class JudgeConfig(models.Model):
    """An OpenAI-compatible judge endpoint and model; blank fields fall back to the settings."""

    name = models.CharField(max_length=120, unique=True)
    # Not a URLField: Django's URL validator wants a dotted host name, and a lab's vLLM box is often
    # a bare name (http://gpu-box:8000/v1, the documented example). clean() checks the shape.
    base_url = models.CharField(
        max_length=300,
        blank=True,
        help_text="e.g. https://api.openai.com/v1; blank: ECHOSTUDIO_JUDGE_BASE_URL",
    )
    model = models.CharField(max_length=200, blank=True, help_text="Blank: ECHOSTUDIO_JUDGE_MODEL")
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the API key; blank: ECHOSTUDIO_JUDGE_API_KEY",
    )
    timeout_s = models.FloatField(null=True, blank=True, help_text="Blank: ECHOSTUDIO_JUDGE_TIMEOUT_SECONDS")
    max_concurrency = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Blank: ECHOSTUDIO_JUDGE_MAX_CONCURRENCY"
    )
    max_retries = models.PositiveSmallIntegerField(default=3)
    temperature = models.FloatField(default=0.0)
    json_mode = models.BooleanField(default=False, help_text="Ask for response_format json_object")
    attach_audio = models.BooleanField(
        default=False,
        help_text="Send the response audio to the judge; a judge that does not listen does not score audio",
    )
    offline_heuristic = models.BooleanField(
        default=False,
        help_text="Score by word overlap with the gold reference, without any model or endpoint: for "
        "trying the app, never for results",
    )
    members = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="ensembles",
        help_text="An ensemble judge: the median of these judges' answers (evaluation.judging.audit)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_ensemble(self) -> bool:
        """Return True for an ensemble judge (the median of its members' answers)."""
        annotated = self.__dict__.get("has_members")  # `reports.judge_config_rows` reads it in its query
        if annotated is not None:
            return bool(annotated)
        return self.pk is not None and self.members.exists()

    @property
    def effective_base_url(self) -> str:
        """Return the endpoint this configuration talks to ("" for the offline heuristic or an ensemble)."""
        if self.offline_heuristic or self.is_ensemble:
            return ""
        return self.base_url or settings.JUDGE_BASE_URL

    @property
    def effective_model(self) -> str:
        """Return the judge model name sent with every prompt (recorded with each judgement)."""
        if self.offline_heuristic:
            return OFFLINE_HEURISTIC_MODEL
        if self.is_ensemble:
            names = ", ".join(self.members.order_by("name").values_list("name", flat=True))
            return f"median of {names}"[:200]
        return self.model or settings.JUDGE_MODEL

    def clean(self) -> None:
        super().clean()
        errors: dict[str, str] = {}
        # An http(s) address with a host (the judge client speaks nothing else), then the host policy.
        if self.base_url and (
            problem := web_url_problem(self.base_url) or outbound_url_problem(self.base_url)
        ):
            errors["base_url"] = problem
        if self.api_key_env:
            problem = key_variable_problem(self.api_key_env)
            url = self.effective_base_url
            if problem is None and url and not self.offline_heuristic:
                problem = named_key_problem(url, self.api_key_env)
            if problem:
                errors["api_key_env"] = problem
        if errors:
            raise ValidationError(errors)

    def api_key(self) -> str:
        """Return the API key for this row's endpoint, which only ever goes to its own host.

        A named ECHOSTUDIO_JUDGE_KEY_* variable's key goes only to the host the operator bound it
        to (ECHOSTUDIO_OUTBOUND_KEY_HOSTS); without one, ECHOSTUDIO_JUDGE_API_KEY goes only to
        ECHOSTUDIO_JUDGE_BASE_URL, and a row naming another URL sends no key. A row naming any other
        variable, or a key bound elsewhere (saved before these checks, or not through a form),
        raises: the judge run fails before anything is sent.
        """
        if self.api_key_env:
            return named_key(self.effective_base_url, self.api_key_env)
        return settings_key(self.effective_base_url, settings.JUDGE_API_KEY, settings.JUDGE_BASE_URL)

    def client_config(self) -> ChatJudgeConfig:
        """Return the judge client configuration, settings filling what this row leaves blank."""
        # Imported here: the client's module brings httpx, which the web process never needs.
        from webapp.lib.llm_client import ChatJudgeConfig

        return ChatJudgeConfig(
            base_url=self.effective_base_url,
            model=self.effective_model,
            api_key=self.api_key(),
            timeout_s=self.timeout_s or settings.JUDGE_TIMEOUT_SECONDS,
            max_retries=self.max_retries,
            max_concurrency=self.max_concurrency or settings.JUDGE_MAX_CONCURRENCY,
            temperature=self.temperature,
            json_mode=self.json_mode,
            outbound=outbound_policy(),
        )


class JudgeRunQuerySet(models.QuerySet["JudgeRun"]):
    def active_for(
        self, system: System, benchmark_version: str, judge_config: JudgeConfig
    ) -> JudgeRunQuerySet:
        """Return the runs of this (system, version, judge) whose job is still queued or running."""
        return (
            self.filter(system=system, benchmark_version=benchmark_version, judge_config=judge_config)
            .exclude(job__status__in=FINISHED_STATUSES)
            .exclude(job__isnull=True)
        )


def run_tally(counts: Mapping[str, int], unreachable: int = 0) -> RowTally:
    """Return a judge run's rows in the one status vocabulary (`webapp.lib.row_outcome`): every stage
    the run stands for is a row, and a judge error or a prompt that got no answer is a failed one."""
    valid = int(counts.get("valid", 0))
    failed = int(counts.get("invalid_json", 0)) + int(counts.get("rubric", 0)) + unreachable
    return RowTally(valid + failed, failed, noun="stages")


class JudgeRun(models.Model):
    """One system's outputs for one benchmark version judged by one judge configuration (a job)."""

    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="judge_runs")
    benchmark_version = models.CharField(max_length=64)
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.CASCADE, related_name="runs")
    retry_errors = models.BooleanField(default=False, help_text="Judge stored judge errors again")
    job = models.OneToOneField(
        "webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_run"
    )
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = JudgeRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"judge run {self.pk}: {self.system_id} {self.benchmark_version} by {self.judge_config_id}"

    def counts(self) -> dict[str, int]:
        """Return the judgements this run stands for (its own and those earlier runs of its judge
        stored for its outputs): valid, and each kind of judge error (the one count the page, the
        API, the client and the run's status read)."""
        return Judgement.objects.for_run(self).error_counts()

    def status(self, counts: dict[str, int] | None = None) -> str:
        """Return what happened: the job's status (a finished run's is its tally's, `run_tally`)."""
        if self.job is None:
            return "queued"
        if self.job.status == SUCCEEDED and tally_of(self.job.result) is None:
            # A run that finished before runs recorded their tally: read it from the judgements.
            return run_tally(self.counts() if counts is None else counts).status
        return str(self.job.status)

    def sentence(self, counts: dict[str, int] | None = None) -> str:
        """Return the status in words with the figures it rests on (`RowTally.sentence`)."""
        if self.job is None:
            return "Queued"
        tally = tally_of(self.job.result)
        if tally is not None:
            return tally.sentence()
        if self.job.status != SUCCEEDED:
            return self.job.error or self.job.get_status_display()
        return run_tally(self.counts() if counts is None else counts).sentence()

    def rerun_report(self) -> str:
        """Return what this run judged afresh and what it left from earlier runs ("" when not known yet)."""
        result = self.job.result if self.job is not None else None
        if not isinstance(result, dict) or "left_errors" not in result:
            return ""
        done = f"This run judged {result['valid'] + result['judge_errors']} stages"
        if result.get("rejudged_errors"):
            done += f", {result['rejudged_errors']} of them judge errors of earlier runs judged again"
        left = int(result["left_errors"])
        if left:
            done += (
                f"; it left {left} judge errors of earlier runs as they were "
                "(run again re-judging errors to judge them again)"
            )
        if result.get("unreachable"):
            done += f"; {result['unreachable']} prompts got no answer (run again to judge them)"
        return done + "."


class JudgementQuerySet(ArchivableQuerySet["Judgement"]):
    def by_judge(self, judge_config: JudgeConfig | int, benchmark_version: str) -> JudgementQuerySet:
        """Return one judge configuration's judgements of a benchmark version's outputs (every system)."""
        return self.in_use("output", "output__item").filter(
            judge_config=judge_config, output__benchmark_version=benchmark_version
        )

    def for_run(self, run: JudgeRun) -> JudgementQuerySet:
        """Return the judgements a run stands for: its judge's, of its system's outputs for its version,
        whichever run of that triple stored them (`run.judgements` holds only this run's own)."""
        return self.by_judge(run.judge_config_id, run.benchmark_version).filter(
            output__system_id=run.system_id
        )

    def errors(self) -> JudgementQuerySet:
        """Return the judge errors (unusable answers, left out of every aggregate)."""
        return self.exclude(error_kind="")

    def error_counts(self) -> dict[str, int]:
        """Return how many judgements are valid, not JSON, or break the rubric (one query)."""
        return self.order_by().aggregate(
            valid=Count("pk", filter=Q(error_kind="")),
            invalid_json=Count("pk", filter=Q(error_kind="invalid_json")),
            rubric=Count("pk", filter=Q(error_kind="rubric")),
        )


class Judgement(Archivable):
    """A judge's verdict on one stage of one output; errors keep the raw answer and carry no score."""

    class ErrorKind(models.TextChoices):
        NONE = "", "None"
        INVALID_JSON = "invalid_json", "Not valid JSON"
        RUBRIC = "rubric", "Breaks the rubric"

    output = models.ForeignKey(ModelOutput, on_delete=models.PROTECT, related_name="judgements")
    stage = models.CharField(max_length=24, choices=Stage.choices)
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="judgements")
    run = models.ForeignKey(
        JudgeRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgements"
    )
    judge_model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=64)
    prompt_key = models.CharField(max_length=64, help_text="sha256 of the prompt (the cache key)")
    subscores = models.JSONField(default=dict, blank=True)
    judge_flags = models.JSONField(default=list, blank=True)
    auto_flags = models.JSONField(default=list, blank=True, help_text="Flags the app decided itself")
    raw_sum = models.FloatField(null=True, blank=True)
    cap = models.PositiveSmallIntegerField(null=True, blank=True)
    cap_reasons = models.JSONField(default=list, blank=True)
    score = models.FloatField(null=True, blank=True, help_text="Final capped score; empty on a judge error")
    rationale = models.TextField(blank=True)
    raw_text = models.TextField(blank=True)
    error_kind = models.CharField(max_length=16, choices=ErrorKind.choices, blank=True, default="")
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    cached = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = JudgementQuerySet.as_manager()

    # Why what was written or scored against the gold is blanked in this copy ("": nothing is):
    # set by `evaluation.judging.access.readable_judgement` for a viewer still labelling the item.
    withheld = ""

    class Meta:
        constraints = [
            # Resuming a run after a crash must never judge (or pay for) a stage twice.
            # Archived judgements (re-judged errors, scores of replaced outputs) stay beside it.
            models.UniqueConstraint(
                fields=["output", "stage", "judge_config"],
                condition=models.Q(archived_at__isnull=True),
                name="one_judgement_per_stage_and_judge",
            )
        ]
        indexes = [models.Index(fields=["judge_config", "stage"], name="judgement_config_stage")]
        ordering = ["output", "stage"]

    def __str__(self) -> str:
        return f"{self.stage} of output {self.output_id} by judge {self.judge_config_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.withheld:
            raise ValueError("A judgement read with its gold-derived fields withheld is never saved.")
        super().save(*args, **kwargs)

    @property
    def is_error(self) -> bool:
        """Return True when the judge's answer was unusable (excluded from every aggregate)."""
        return bool(self.error_kind)


class JudgeCacheEntry(models.Model):
    """A judge's answer to one exact prompt (sha256 of model, messages, temperature)."""

    key = models.CharField(max_length=64, primary_key=True)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key


class RubricSample(models.Model):
    """A blind sample of outputs that evaluators score by hand with the judge rubrics."""

    name = models.CharField(max_length=120)
    benchmark_version = models.CharField(max_length=64)
    evaluators = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="rubric_samples")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    def n_scored_by(self, evaluator: User) -> int:
        """Return how many of the sample's outputs the evaluator has scored."""
        return self.entries.filter(HumanJudgement.objects.scored_by(evaluator)).count()

    def next_entry_for(self, evaluator: User) -> RubricSampleEntry | None:
        """Return the evaluator's next output to score: the first entry they have not scored yet."""
        return self.entries.filter(~HumanJudgement.objects.scored_by(evaluator)).order_by("position").first()


class RubricSampleEntry(models.Model):
    """One output in a sample; `position` is a shuffled order so systems interleave."""

    sample = models.ForeignKey(RubricSample, on_delete=models.CASCADE, related_name="entries")
    output = models.ForeignKey(ModelOutput, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sample", "output"], name="output_once_per_sample")]
        ordering = ["sample", "position"]

    def __str__(self) -> str:
        return f"entry {self.position} of sample {self.sample_id}"


class HumanJudgementQuerySet(ArchivableQuerySet["HumanJudgement"]):
    def scored_by(self, evaluator: User, output_ref: str = "output_id") -> Exists:
        """Return an `Exists`, true when the evaluator has scored the outer row's output (`output_ref`)."""
        return Exists(self.in_use().filter(output_id=OuterRef(output_ref), evaluator=evaluator))

    def by_stage_of(self, output: ModelOutput, evaluator: User) -> dict[str, HumanJudgement]:
        """Return the evaluator's saved scores of one output, keyed by stage."""
        return {
            judgement.stage: judgement
            for judgement in self.in_use().filter(output=output, evaluator=evaluator)
        }


class HumanJudgement(Archivable):
    """An evaluator's hand-applied rubric for one stage of one output (never shown the system)."""

    output = models.ForeignKey(ModelOutput, on_delete=models.PROTECT, related_name="human_judgements")
    stage = models.CharField(max_length=24, choices=Stage.choices)
    evaluator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="human_judgements"
    )
    subscores = models.JSONField(default=dict)
    flags = models.JSONField(default=list, blank=True)
    auto_flags = models.JSONField(default=list, blank=True)
    raw_sum = models.FloatField()
    cap = models.PositiveSmallIntegerField(null=True, blank=True)
    cap_reasons = models.JSONField(default=list, blank=True)
    score = models.FloatField()
    comment = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = HumanJudgementQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["output", "stage", "evaluator"],
                condition=models.Q(archived_at__isnull=True),
                name="one_human_score_per_stage",
            )
        ]
        ordering = ["output", "stage"]

    def __str__(self) -> str:
        return f"{self.stage} of output {self.output_id} by evaluator {self.evaluator_id}"
