"""Human listening studies: blind MOS and helpfulness ratings of systems' outputs.

A study freezes what it plays: each stimulus copies its response text and audio at creation,
so re-importing a system's outputs later cannot change what some raters heard and others did not;
the audio raters hear is loudness-normalised to one level, the clip at its own level kept beside it
(`evaluation.studies.creation.items`).
Raters reach stimuli only through random public ids; nothing they receive names a system.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from annotation.recording.models import Dialogue, Item
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, ModelOutput, System
from evaluation.studies.design import DEFAULT_RATINGS_PER_OUTPUT, DIMENSIONS, Dimension, dimensions_for
from webapp.lib.ratings import LOW_CORRELATION, STRAIGHTLINING_VARIANCE
from webapp.models import Archivable, ArchivableQuerySet, User


class Study(models.Model):
    """A blind rating study of several systems' outputs on the same sampled items, or of their
    replies across whole dialogues (unit "dialogue": raters hear the conversation and rate every
    assistant turn)."""

    class Unit(models.TextChoices):
        ITEM = "item", "Single-turn outputs"
        DIALOGUE = "dialogue", "Dialogues (every assistant turn rated)"

    class Kind(models.TextChoices):
        ACR = "acr", "ACR: absolute 1-5 ratings (MOS)"
        CCR = "ccr", "CCR: comparison MOS, -3..+3 (CMOS)"
        DCR = "dcr", "DCR: degradation against the reference, 1-5 (DMOS)"
        AB = "ab", "A/B preference (with no preference)"
        MUSHRA = "mushra", "MUSHRA: 0-100 against a reference (BS.1534)"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200, help_text="Seen by admins only")
    title_for_raters = models.CharField(max_length=120, default="Listening study")
    instructions = models.TextField()
    dimensions = models.JSONField(default=list, help_text="Keys of evaluation.studies.design.DIMENSIONS")
    systems = models.ManyToManyField(System, related_name="studies")
    benchmark_version = models.CharField(max_length=64, default=DEFAULT_BENCHMARK_VERSION)
    unit = models.CharField(max_length=8, choices=Unit.choices, default=Unit.ITEM)
    kind = models.CharField(
        max_length=8, choices=Kind.choices, default=Kind.ACR, help_text="The test type raters take"
    )
    reference_system = models.ForeignKey(
        System,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="CCR: what every system is compared with (none: every pair); DCR, MUSHRA: the reference",
    )
    anchors = models.JSONField(
        default=list, blank=True, help_text='MUSHRA: "low" (3.5 kHz) and optionally "mid" (7 kHz) anchors'
    )
    items_per_system = models.PositiveIntegerField(help_text="Dialogues per system in a dialogue study")
    same_dialogues_for_all = models.BooleanField(
        default=True,
        help_text="Dialogue studies: every system on the same dialogues, or spread over the pool",
    )
    ratings_per_output = models.PositiveSmallIntegerField(default=DEFAULT_RATINGS_PER_OUTPUT)
    seed = models.BigIntegerField(help_text="Makes sampling and presentation order reproducible")
    trap_score = models.PositiveSmallIntegerField(default=2)
    allowed_check_failures = models.PositiveSmallIntegerField(
        default=0, help_text="Failed gold and trapping items a rater may have before being flagged"
    )
    straightlining_variance = models.FloatField(default=STRAIGHTLINING_VARIANCE)
    min_correlation = models.FloatField(default=LOW_CORRELATION)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name

    @property
    def is_dialogue(self) -> bool:
        """Return True when raters rate whole dialogues turn by turn."""
        return self.unit == self.Unit.DIALOGUE

    @property
    def is_comparison(self) -> bool:
        """Return True for a comparison test (CCR, A/B, MUSHRA): raters hear several samples per trial."""
        return self.kind != self.Kind.ACR

    @property
    def is_pairs(self) -> bool:
        """Return True when each trial is a pair of samples (CCR and A/B)."""
        return self.kind in (self.Kind.CCR, self.Kind.DCR, self.Kind.AB)

    @property
    def reference_first(self) -> bool:
        """Return True when a pair always plays the reference first, as A (DCR; P.800 Annex D)."""
        return self.kind == self.Kind.DCR

    def dimension_list(self) -> list[Dimension]:
        """Return the study's rating dimensions in catalogue order."""
        return dimensions_for(self.dimensions)

    def rates_content(self) -> bool:
        """Return True when raters judge the response text (so it must be shown)."""
        return any(DIMENSIONS[key].modality == "content" for key in self.dimensions)

    def rates_audio(self) -> bool:
        """Return True when raters judge the response audio."""
        return any(DIMENSIONS[key].modality == "audio" for key in self.dimensions)


class StudyRater(models.Model):
    """An evaluator invited to a study, and the admin's decision after screening them."""

    class Decision(models.TextChoices):
        UNDECIDED = "", "Not decided"
        INCLUDE = "include", "Included"
        EXCLUDE = "exclude", "Excluded"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="raters")
    evaluator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="study_seats"
    )
    decision = models.CharField(
        max_length=8, choices=Decision.choices, default=Decision.UNDECIDED, blank=True
    )
    decision_note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "evaluator"], name="one_seat_per_evaluator")]
        ordering = ["study", "evaluator__username"]

    def __str__(self) -> str:
        return f"{self.evaluator_id} in study {self.study_id}"


class StudyStimulus(models.Model):
    """One thing raters hear in a study: a system's output, a gold output, a trap or a training sample."""

    class Kind(models.TextChoices):
        RATED = "rated", "Rated output"
        GOLD = "gold", "Gold output"
        TRAP = "trap", "Trapping item"
        TRAINING = "training", "Training sample"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="stimuli")
    kind = models.CharField(max_length=8, choices=Kind.choices, db_index=True)
    output = models.ForeignKey(
        ModelOutput, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    system = models.ForeignKey(System, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    item = models.ForeignKey(
        Item, on_delete=models.PROTECT, related_name="+", help_text="The query (a dialogue's first turn)"
    )
    dialogue = models.ForeignKey(
        Dialogue,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Dialogue studies: the conversation; its replies are the stimulus's turns",
    )
    response_text = models.TextField(blank=True)
    audio_key = models.CharField(max_length=200, blank=True, help_text="What raters hear, at the study level")
    original_audio_key = models.CharField(
        max_length=200, blank=True, help_text="The same clip at its own level (admins only)"
    )
    audio_seconds = models.FloatField(default=0.0, help_text="0 when the length could not be read")
    expected = models.JSONField(
        default=dict, blank=True, help_text="Gold and traps: {dimension: [lowest, highest]} acceptable score"
    )

    class Meta:
        ordering = ["study", "kind", "pk"]
        verbose_name_plural = "study stimuli"

    def __str__(self) -> str:
        return f"{self.kind} stimulus {self.public_id}"


class StudyTurn(models.Model):
    """One assistant turn of a dialogue stimulus: the system's reply to the user's turn, frozen like
    a single-turn stimulus (text copied, audio re-encoded clean under a random key)."""

    stimulus = models.ForeignKey(StudyStimulus, on_delete=models.CASCADE, related_name="turns")
    turn = models.PositiveSmallIntegerField(help_text="1-based, as Item.turn")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+", help_text="The user's turn")
    output = models.ForeignKey(
        ModelOutput, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    response_text = models.TextField(blank=True)
    audio_key = models.CharField(max_length=200, blank=True, help_text="What raters hear, at the study level")
    original_audio_key = models.CharField(
        max_length=200, blank=True, help_text="The same clip at its own level (admins only)"
    )
    audio_seconds = models.FloatField(default=0.0, help_text="0 when the length could not be read")
    expected = models.JSONField(
        default=dict,
        blank=True,
        help_text="A trapping turn: {dimension: [lowest, highest]} acceptable score; {} for a reply",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["stimulus", "turn"], name="one_reply_per_turn")]
        ordering = ["stimulus", "turn"]

    def __str__(self) -> str:
        return f"turn {self.turn} of {self.stimulus}"


class StudyAssignmentQuerySet(models.QuerySet["StudyAssignment"]):
    def of_rater(self, study: Study, evaluator: User) -> StudyAssignmentQuerySet:
        """Return the evaluator's assignments in the study."""
        return self.filter(study=study, evaluator=evaluator)

    def next_for(self, study: Study, evaluator: User) -> StudyAssignment | None:
        """Return the rater's next stimulus: their first unsubmitted assignment in presentation order,
        or None when they have rated everything."""
        return (
            self.of_rater(study, evaluator)
            .filter(submitted_at__isnull=True)
            .select_related("stimulus__item__recording")
            .order_by("position")
            .first()
        )

    def unrated_before(self, assignment: StudyAssignment) -> StudyAssignmentQuerySet:
        """Return the rater's unsubmitted assignments that come before this one in their order."""
        return self.filter(
            study_id=assignment.study_id,
            evaluator_id=assignment.evaluator_id,
            position__lt=assignment.position,
            submitted_at__isnull=True,
        )


class StudyAssignment(models.Model):
    """One stimulus for one evaluator, at its place in their presentation order."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    evaluator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="study_assignments"
    )
    stimulus = models.ForeignKey(StudyStimulus, on_delete=models.CASCADE, related_name="assignments")
    position = models.PositiveIntegerField()
    presented_at = models.DateTimeField(null=True, blank=True, help_text="First shown to the evaluator")
    played_at = models.DateTimeField(null=True, blank=True, help_text="Response played to the end")
    submitted_at = models.DateTimeField(null=True, blank=True)

    objects = StudyAssignmentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["stimulus", "evaluator"], name="one_assignment_per_stimulus"),
            models.UniqueConstraint(fields=["study", "evaluator", "position"], name="one_stimulus_per_place"),
        ]
        ordering = ["study", "evaluator", "position"]

    def __str__(self) -> str:
        return f"assignment {self.public_id}"


class StudyTurnPlayback(models.Model):
    """The server's record that a dialogue turn's reply played to the end for one assignment
    (the per-turn counterpart of `StudyAssignment.played_at`)."""

    assignment = models.ForeignKey(StudyAssignment, on_delete=models.CASCADE, related_name="turn_playbacks")
    turn = models.PositiveSmallIntegerField()
    played_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["assignment", "turn"], name="one_playback_per_turn")]
        ordering = ["assignment", "turn"]

    def __str__(self) -> str:
        return f"turn {self.turn} of assignment {self.assignment_id} played"


class StudyRating(Archivable):
    """One score (1-5) on one dimension of one assignment's turn (1 for a single-turn sample)."""

    assignment = models.ForeignKey(StudyAssignment, on_delete=models.PROTECT, related_name="ratings")
    turn = models.PositiveSmallIntegerField(
        default=1, help_text="The assistant turn; 1 for a single-turn sample"
    )
    dimension = models.CharField(max_length=32)
    score = models.PositiveSmallIntegerField()

    objects = ArchivableQuerySet["StudyRating"].as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "turn", "dimension"], name="one_score_per_turn_and_dimension"
            ),
            models.CheckConstraint(condition=models.Q(score__gte=1, score__lte=5), name="score_1_to_5"),
        ]

    def __str__(self) -> str:
        return f"turn {self.turn} {self.dimension}={self.score}"


class StudyTrialPart(models.Model):
    """One sample of a comparison trial. The trial is a `StudyStimulus` with no audio of its own
    (so assignments, presentation order and progress work as for ACR); its parts are the stimuli
    it plays: systems' outputs, and in MUSHRA the reference, its hidden copy and the anchors."""

    class Role(models.TextChoices):
        SYSTEM = "system", "System"
        REFERENCE = "reference", "Reference (shown as such)"
        HIDDEN_REFERENCE = "hidden_reference", "Hidden reference"
        LOW_ANCHOR = "low_anchor", "Anchor 3.5 kHz"
        MID_ANCHOR = "mid_anchor", "Anchor 7 kHz"

    trial = models.ForeignKey(StudyStimulus, on_delete=models.CASCADE, related_name="parts")
    sample = models.ForeignKey(StudyStimulus, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=16, choices=Role.choices)
    order = models.PositiveSmallIntegerField(
        help_text="Canonical order: a pair's reference (or first system) is 0"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trial", "sample"], name="one_part_per_sample")]
        ordering = ["trial", "order"]

    def __str__(self) -> str:
        return f"{self.role} of {self.trial}"


class StudySlot(models.Model):
    """Where one rater hears one part of a trial: its place (0: MUSHRA's open reference; then A, B
    or the sliders in order), when its playback was recorded, and the rater's score."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    assignment = models.ForeignKey(StudyAssignment, on_delete=models.CASCADE, related_name="slots")
    part = models.ForeignKey(StudyTrialPart, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField()
    played_at = models.DateTimeField(null=True, blank=True, help_text="Played to the end")
    score = models.SmallIntegerField(
        null=True,
        blank=True,
        help_text="Pairs: on the second slot only, the second compared with the first as answered "
        "(CCR -3..+3, DCR 1-5, A/B -1, 0 for no preference, +1); MUSHRA: 0-100 on every scored slot",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assignment", "position"], name="one_part_per_place"),
            models.UniqueConstraint(fields=["assignment", "part"], name="one_place_per_part"),
        ]
        ordering = ["assignment", "position"]

    def __str__(self) -> str:
        return f"slot {self.position} of {self.assignment}"
