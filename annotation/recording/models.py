"""Items (EchoEval scripts), the takes actors record of them, and the blind reviews of those takes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.db import models
from django.db.models import Exists, OuterRef, Q, Subquery

from annotation.audio.suggestions import contours_for_waveform
from annotation.recording.consent.models import PUBLIC_RELEASE, SCOPES, ConsentRecord
from webapp.lib import vocabulary
from webapp.models import Archivable, ArchivableQuerySet, in_use_filter
from webapp.roles import Role

# Members are the vocabulary's constants (webapp.lib.vocabulary); no value is spelled out twice.
if TYPE_CHECKING:
    from webapp.models import User


class Scenario(models.TextChoices):
    IMPLICIT = vocabulary.choice(vocabulary.IMPLICIT)
    AUDIO_DOMINANT = vocabulary.choice(vocabulary.AUDIO_DOMINANT)
    HIGH_AROUSAL = vocabulary.choice(vocabulary.HIGH_AROUSAL)
    MODALITY_CONFLICT = vocabulary.choice(vocabulary.MODALITY_CONFLICT)
    EMOTION_SHIFT = vocabulary.choice(vocabulary.EMOTION_SHIFT)


class Emotion(models.TextChoices):
    HAPPY = vocabulary.choice(vocabulary.HAPPY)
    SAD = vocabulary.choice(vocabulary.SAD)
    ANGRY = vocabulary.choice(vocabulary.ANGRY)
    SURPRISE = vocabulary.choice(vocabulary.SURPRISE)
    DISGUST = vocabulary.choice(vocabulary.DISGUST)
    FEAR = vocabulary.choice(vocabulary.FEAR)
    NEUTRAL = vocabulary.choice(vocabulary.NEUTRAL)


class Intensity(models.TextChoices):
    LOW = vocabulary.choice(vocabulary.LOW)
    MEDIUM = vocabulary.choice(vocabulary.MEDIUM)
    HIGH = vocabulary.choice(vocabulary.HIGH)


class Split(models.TextChoices):
    TEST = vocabulary.choice(vocabulary.TEST)
    DEV = vocabulary.choice(vocabulary.DEV)
    TRAIN = vocabulary.choice(vocabulary.TRAIN)
    ECHOMIND = vocabulary.ECHOMIND_DELIVERIES, "EchoMind deliveries"

    @classmethod
    def echoeval_choices(cls) -> list[tuple[str, str]]:
        """Return EchoEval's splits (test, dev, train): what its jobs and item files choose from."""
        return [(value, label) for value, label in cls.choices if value in vocabulary.SPLITS]


class TakeQuerySet(ArchivableQuerySet["Take"]):
    def open(self) -> TakeQuerySet:
        """Return takes in use whose fate is still open (being analysed or in review)."""
        return self.in_use("item").filter(status__in=Take.OPEN_STATUSES)

    def waiting_for_review(self) -> TakeQuerySet:
        """Return takes in use analysed and waiting for their reviewers' verdicts."""
        return self.in_use("item").filter(status=Take.Status.IN_REVIEW)

    def decided(self) -> TakeQuerySet:
        """Return takes whose reviewers have decided them (accepted or rejected)."""
        return self.filter(status__in=Take.DECIDED_STATUSES)

    def flagged(self) -> TakeQuerySet:
        """Return takes the speech check sent to review with a flag (script or speaker in doubt)."""
        return self.filter(flagged_for_review=True)

    def consented_for(self, scope: str) -> TakeQuerySet:
        """Return the takes their actor allows to be used for `scope`: the one consent rule.

        Every new export, snapshot, study, voice prompt and leaderboard asks it. A take counts when
        its actor's consent in force grants the scope and so did the record it was recorded under
        (a take keeps the scopes in force when it was made; narrowing consent later narrows it).
        Withdrawal marks every record of the person withdrawn, so none of their takes counts, even
        after they consent again (only takes recorded under the new consent do). A take recorded
        before the studio kept consent (no record of its own) counts for what its actor's consent
        in force grants; while they have never given one, for research uses but never for public
        release, which needs consent given.
        """
        return self.filter(consent_allows(scope))

    def refused_for(self, scope: str) -> TakeQuerySet:
        """Return the takes `consented_for(scope)` leaves out (what a filter on items excludes)."""
        return self.exclude(pk__in=Take.objects.filter(consent_allows(scope)).values("pk"))


def recording_consented_for(scope: str, item: str = "") -> Q:
    """Return the filter keeping the items (reached by `item`; "" on items) whose recording is
    consented for `scope` (`TakeQuerySet.consented_for`), or that have no recording."""
    prefix = f"{item}__" if item else ""
    return Q(**{f"{prefix}recording__isnull": True}) | Q(
        **{f"{prefix}recording__in": Take.objects.consented_for(scope).values("pk")}
    )


def consent_allows(scope: str, take: str = "") -> Q:
    """Return the filter of `TakeQuerySet.consented_for` (on takes reached by `take`, "" on takes)."""
    if scope not in SCOPES:
        raise ValueError(f"unknown consent scope {scope!r}; expected one of {', '.join(SCOPES)}")
    prefix = f"{take}__" if take else ""
    records = ConsentRecord.objects.filter(person=OuterRef(f"{prefix}actor"))
    granted = Exists(records.filter(is_current=True, withdrawn_at__isnull=True, **{scope: True}))
    withdrew = Exists(records.filter(withdrawn_at__isnull=False))
    recorded_under_it = Q(
        **{f"{prefix}consent__withdrawn_at__isnull": True, f"{prefix}consent__{scope}": True}
    )
    no_record_of_its_own = Q(**{f"{prefix}consent__isnull": True})
    allowed = Q(granted, recorded_under_it | Q(no_record_of_its_own, ~withdrew))
    if scope != PUBLIC_RELEASE:
        allowed |= Q(no_record_of_its_own, ~Exists(records))
    return allowed


class ReviewQuerySet(ArchivableQuerySet["Review"]):
    def open(self) -> ReviewQuerySet:
        """Return reviews still waiting for a verdict on a take that is still in review."""
        return self.filter(Review.open_q())

    def open_for(self, reviewer: User) -> ReviewQuerySet:
        """Return the reviewer's open reviews in their review-queue order.

        Ordered by the random public id, a shuffle that stays put between page loads: in upload
        order, takes one actor uploaded together would sit together and could be told apart.
        """
        return self.open().filter(reviewer=reviewer).order_by("public_id")

    def changeable_by(self, reviewer: User) -> ReviewQuerySet:
        """Return the reviewer's given verdicts on takes still in review (they may change them)."""
        return (
            self.filter(
                in_use_filter("take", "take__item"), reviewer=reviewer, take__status=Take.Status.IN_REVIEW
            )
            .exclude(verdict=Review.Verdict.PENDING)
            .order_by("assigned_at", "pk")
        )

    def decided_by(self, reviewer: User) -> ReviewQuerySet:
        """Return the reviews the reviewer has given a verdict on (their "done" count)."""
        return self.filter(reviewer=reviewer).exclude(verdict=Review.Verdict.PENDING)


class ItemQuerySet(ArchivableQuerySet["Item"]):
    """Items, and the one lock order for an item and everything hanging off it.

    Every transaction that changes an item's takes, reviews, annotations or gold locks rows in this
    order: the item (`lock`), then its takes, then their reviews, then its annotations; gold rows
    are written only under the item lock. With one order two such transactions can wait for each
    other but never deadlock, and the item lock serialises every decision about one item: the last
    two verdicts on a take, a reopened annotation racing an adjudication, two leads saving gold.
    """

    def lock(self, item_id: int) -> Item:
        """Lock the item row for the rest of the transaction (the first lock; see the class)."""
        return self.select_for_update(of=("self",)).get(pk=item_id)

    def lock_if_exists(self, item_id: int | Subquery) -> int | None:
        """Lock the item (an id, or a subquery giving one) if there is one; return its id.

        A later layer passes a subquery of its own table (`AnnotationQuerySet.lock_item_of`), so
        the lock takes one round trip without this layer naming that table.
        """
        locked = self.select_for_update(of=("self",)).filter(pk=item_id)  # type: ignore[misc]  # stubs omit expressions
        return locked.values_list("pk", flat=True).first()

    def lock_all(self, item_ids: Iterable[int]) -> list[int]:
        """Lock several items in id order (the order every batch takes them in); return their ids."""
        return list(
            self.select_for_update(of=("self",))
            .filter(pk__in=list(item_ids))
            .order_by("pk")
            .values_list("pk", flat=True)
        )

    def waiting_for_labels(self) -> ItemQuerySet:
        """Return items in use whose recording is accepted and that have no gold yet: annotation's work."""
        return self.in_use().filter(state__in=[Item.State.RECORDED, Item.State.ANNOTATING])

    def single_turn(self) -> ItemQuerySet:
        """Return the single-utterance items (EchoEval proper): those in no dialogue."""
        return self.filter(dialogue__isnull=True)

    def dialogue_turns(self) -> ItemQuerySet:
        """Return the items that are user turns of a dialogue, in conversation order."""
        return self.filter(dialogue__isnull=False).order_by("dialogue_id", "turn")

    def earlier_turns(self, item: Item) -> ItemQuerySet:
        """Return the turns before `item` in its dialogue, first turn first (none for a single item)."""
        if item.dialogue_id is None or item.turn is None:
            return self.none()
        return self.filter(dialogue_id=item.dialogue_id, turn__lt=item.turn).order_by("turn")

    def earlier_turns_of_all(self, items: Iterable[Item]) -> ItemQuerySet:
        """Return every turn before any of `items` in its dialogue, in one query (each dialogue read
        once, up to the latest of its turns asked about), ordered by dialogue then turn."""
        reach: dict[int, int] = {}
        for item in items:
            if item.dialogue_id is not None and item.turn:
                reach[item.dialogue_id] = max(reach.get(item.dialogue_id, 0), item.turn)
        if not reach:
            return self.none()
        wanted = models.Q()
        for dialogue_id, reached in reach.items():
            wanted |= models.Q(dialogue_id=dialogue_id, turn__lt=reached)
        return self.filter(wanted).order_by("dialogue_id", "turn")


class Dialogue(models.Model):
    """A conversation of user turns (paper B.5): each turn is an Item with `dialogue` and `turn` set.

    The planned trajectory is the turns themselves: each holds its scenario, target emotion and
    intensity, and the assistant strategy expected (`Item.expected_strategy`). One actor records
    every turn (speaker consistency): the turns share `Item.actor`, and assignment moves them together.
    """

    external_id = models.CharField(max_length=60, unique=True, help_text="Stable id, e.g. ED-0001")
    topic = models.CharField(max_length=200, blank=True)
    split = models.CharField(max_length=8, choices=Split.choices, default=vocabulary.DEFAULT_SPLIT)
    voice = models.CharField(
        max_length=64, blank=True, help_text="Synthetic voice of the user (demo and builder data)"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["external_id"]

    def __str__(self) -> str:
        return self.external_id

    @staticmethod
    def turn_external_id(dialogue_external_id: str, turn: int) -> str:
        """Return the item id of a dialogue's turn (`ED-0001.t3`): the one spelling of it."""
        return f"{dialogue_external_id}.t{turn}"


class Item(Archivable):
    """One EchoEval utterance: the script an actor performs and everything later attached to it.

    An item may be a user turn of a `Dialogue` (`dialogue`, `turn` from 1); single-turn EchoEval
    items have neither.
    """

    class State(models.TextChoices):
        SCRIPTED = "scripted", "Scripted"
        RECORDING = "recording", "Recording"
        IN_REVIEW = "in_review", "In review"
        RECORDED = "recorded", "Recorded"
        ANNOTATING = "annotating", "Annotating"
        GOLD = "gold", "Gold"

    # The script is not work itself: deletable while nothing hangs under it (PROTECT keeps it after).
    work_product = False

    external_id = models.CharField(max_length=64, unique=True, help_text="Stable id, e.g. EE-0001")
    text = models.TextField()
    scenario = models.CharField(max_length=32, choices=Scenario.choices)
    target_emotion = models.CharField(max_length=16, choices=Emotion.choices)
    emotion_variant = models.CharField(max_length=64, blank=True, help_text="e.g. anxiety within fear")
    target_intensity = models.CharField(
        max_length=8, choices=Intensity.choices, default=vocabulary.DEFAULT_INTENSITY
    )
    instructions = models.TextField(blank=True)
    split = models.CharField(max_length=8, choices=Split.choices, default=vocabulary.DEFAULT_SPLIT)
    state = models.CharField(max_length=16, choices=State.choices, default=State.SCRIPTED)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_items",
        # The admin's choices are the role's holders (`webapp.roles.users_with_role`); not only
        # active ones here, so an item keeps validating after its actor's account is closed.
        limit_choices_to={"groups__name": Role.VOICE_ACTOR.label},
    )
    recording = models.ForeignKey(
        "Take", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="Accepted take"
    )
    dialogue = models.ForeignKey(
        Dialogue, null=True, blank=True, on_delete=models.CASCADE, related_name="turns"
    )
    turn = models.PositiveSmallIntegerField(null=True, blank=True, help_text="1 for a dialogue's first turn")
    expected_strategy = models.CharField(
        max_length=64,
        blank=True,
        db_default="",  # the item import's set-based INSERT names only the item file's columns
        help_text="The assistant strategy the dialogue's plan expects here",
    )
    reference_reply = models.TextField(
        blank=True,
        db_default="",
        help_text="A reference assistant reply to this turn (history for the next turns)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ItemQuerySet.as_manager()

    class Meta:
        ordering = ["external_id"]
        # Plain indexes (db_index on a CharField adds a second, LIKE index nobody uses on PostgreSQL):
        # every index is paid for on each imported row (issue 14).
        indexes = [
            models.Index(fields=["state", "id"], name="item_by_state"),
            models.Index(fields=["split", "scenario"], name="item_by_split_scenario"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "turn"], name="one_item_per_dialogue_turn"),
            models.CheckConstraint(
                condition=(models.Q(dialogue__isnull=True, turn__isnull=True))
                | models.Q(dialogue__isnull=False, turn__gte=1),
                name="dialogue_turn_numbered_from_one",
            ),
        ]

    def __str__(self) -> str:
        return self.external_id

    @property
    def is_dialogue_turn(self) -> bool:
        return self.dialogue_id is not None


class Take(Archivable):
    """One recording of an item by its actor. Stored under random keys; reviewers never see who made it."""

    class Status(models.TextChoices):
        ANALYSING = "analysing", "Analysing"
        IN_REVIEW = "in_review", "In review"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"
        SUPERSEDED = "superseded", "Superseded"

    # A newer take of the same item may still be recorded while a take's fate is open.
    OPEN_STATUSES = (Status.ANALYSING, Status.IN_REVIEW)
    DECIDED_STATUSES = (Status.ACCEPTED, Status.REJECTED)

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="takes")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="takes")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ANALYSING, db_index=True)
    audio_key = models.CharField(max_length=200, help_text="16 kHz mono 16-bit WAV")
    original_key = models.CharField(max_length=200)
    original_format = models.CharField(max_length=32, blank=True)
    duration_seconds = models.FloatField(default=0.0)
    qc = models.JSONField(default=dict, blank=True)
    features = models.JSONField(default=dict, blank=True)
    contours = models.JSONField(
        default=dict, blank=True, help_text="Pitch and intensity contours for display (see acoustics)"
    )
    # The contours as the waveform draws them, kept with the analysis so that no page rebuilds
    # them per request (issue 27); NULL until computed (takes analysed before it: on first read).
    waveform = models.JSONField(
        null=True, blank=True, editable=False, help_text="`contours` as [[t, value], ...] per track"
    )
    # Min/max waveform peaks at a few zoom levels (`annotation.audio.peaks`), made by the analysis,
    # so a page draws a long take at once; NULL until made (older takes: on their first page).
    peaks = models.JSONField(
        null=True, blank=True, editable=False, help_text="Waveform peaks per samples-per-pixel level"
    )
    analysis_job = models.ForeignKey(
        "webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Set by the analysis from the speech check's flags (`take_check.review_flags`, reasons in
    # qc["speech"]): a column, so the admins' dashboard finds flagged takes without reading qc.
    flagged_for_review = models.BooleanField(
        default=False,
        db_index=True,
        help_text="The speech check doubts the script or the speaker; reviewers see why after their verdict",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # The actor's consent in force when the take was recorded (null: recorded before the studio
    # kept consent records); its scopes bound the take's uses (`TakeQuerySet.consented_for`).
    consent = models.ForeignKey(
        ConsentRecord, null=True, blank=True, on_delete=models.PROTECT, related_name="takes", editable=False
    )

    objects = TakeQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"take {self.public_id} of {self.item_id}"

    def waveform_tracks(self) -> dict[str, list[list[float]]]:
        """Return the pitch and energy tracks the waveform draws (`suggestions.contours_for_waveform`),
        as stored with the analysis; a take analysed before they were stored gets them now, once."""
        if self.waveform is None:
            self.waveform = contours_for_waveform(self.contours or {})
            # Conditional: a re-analysis that stored newer tracks meanwhile keeps them.
            Take.objects.filter(pk=self.pk, waveform__isnull=True).update(waveform=self.waveform)
        return cast(dict[str, list[list[float]]], self.waveform)


class RejectReason(models.TextChoices):
    WRONG_EMOTION = "wrong_emotion", "Wrong emotion"
    WRONG_INTENSITY = "wrong_intensity", "Wrong intensity"
    SCENARIO_NOT_CONVEYED = "scenario_not_conveyed", "Scenario not conveyed (e.g. sarcasm not audible)"
    MISREAD_SCRIPT = "misread_script", "Misread script"
    AUDIO_QUALITY = "audio_quality", "Audio quality"
    OTHER = "other", "Other"


class Review(Archivable):
    """One reviewer's blind verdict on one take."""

    class Verdict(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPT = "accept", "Accept"
        REJECT = "reject", "Reject"

    # What reviewers see in links and the API: random, so ids reveal no upload order or batch.
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    take = models.ForeignKey(Take, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    verdict = models.CharField(max_length=8, choices=Verdict.choices, default=Verdict.PENDING, db_index=True)
    reasons = models.JSONField(default=list, blank=True)
    comment = models.TextField(blank=True)
    assigned_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # The playback gate (`access.verdict_unlocked`): when the take was first handed to the
    # reviewer, and when the server accepted that it had played to the end.
    presented_at = models.DateTimeField(null=True, blank=True, help_text="Take first shown to the reviewer")
    played_at = models.DateTimeField(null=True, blank=True, help_text="Take played to the end")

    objects = ReviewQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["take", "reviewer"], name="one_review_per_reviewer")]
        # The reviewer's queue (`open_for`) in its order: a range scan of their pending reviews.
        indexes = [
            models.Index(
                fields=["reviewer", "assigned_at", "id"],
                condition=models.Q(verdict="pending"),
                name="review_pending_queue",
            )
        ]
        ordering = ["assigned_at"]

    def __str__(self) -> str:
        return f"review of {self.take_id} ({self.verdict})"

    @staticmethod
    def open_q(prefix: str = "") -> models.Q:
        """Return the condition "pending, on a take still in review", from a model `prefix` away.

        `Review.open_q("reviews__")` counts a reviewer's open reviews in an annotation over users.
        """
        return in_use_filter("take", "take__item", prefix=prefix) & models.Q(
            **{f"{prefix}verdict": Review.Verdict.PENDING, f"{prefix}take__status": Take.Status.IN_REVIEW}
        )
