"""Consent texts (versioned) and consent records: what each person allowed, under which text, when.

A person gives consent by ticking scopes under the current text; that makes a new record, which
becomes their current one (an earlier record stays, as the scopes its takes were recorded under).
Withdrawal marks every record of the person withdrawn, with who withdrew, when and why: their
takes then leave every new export, snapshot, study and leaderboard (`TakeQuerySet.consented_for`).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

# The uses a voice or a judgement may be put to. Each value is also a field of ConsentRecord.
RESEARCH_EVALUATION = "research_evaluation"
MODEL_TRAINING = "model_training"
PUBLIC_RELEASE = "public_release"
VOICE_PROMPT = "voice_prompt"
SCOPES = (RESEARCH_EVALUATION, MODEL_TRAINING, PUBLIC_RELEASE, VOICE_PROMPT)
SCOPE_LABELS = {
    RESEARCH_EVALUATION: "Research evaluation (benchmarks, listening studies, leaderboards)",
    MODEL_TRAINING: "Model training",
    PUBLIC_RELEASE: "Public release of my recordings",
    VOICE_PROMPT: "Use of my voice as a prompt for speech synthesis",
}

DEFAULT_CONSENT_TEXT = """\
EchoStudio records your voice (as takes of scripted utterances) and keeps your judgements
(reviews, labels, ratings) for the lab's research on empathetic speech models.

You choose below what your contributions may be used for. You may withdraw at any time on your
consent page: from then on your recordings are left out of every new export, training dataset,
listening study and leaderboard, and the lab receives a list of the earlier uses so it can act.
Withdrawing does not undo publications or models made before it.
"""


class ConsentText(models.Model):
    """One version of the text people consent under; the newest version is the one shown."""

    version = models.PositiveIntegerField(unique=True)
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"consent text v{self.version}"

    @classmethod
    def current(cls) -> ConsentText:
        """Return the newest consent text (the studio's first version when none was written yet)."""
        text = cls.objects.order_by("-version").first()
        if text is None:
            text, _ = cls.objects.get_or_create(version=1, defaults={"body": DEFAULT_CONSENT_TEXT})
        return text


class ConsentRecordQuerySet(models.QuerySet["ConsentRecord"]):
    def current(self) -> ConsentRecordQuerySet:
        """Return each person's current record (withdrawn or not)."""
        return self.filter(is_current=True)

    def in_force(self) -> ConsentRecordQuerySet:
        """Return the current records that are not withdrawn."""
        return self.filter(is_current=True, withdrawn_at__isnull=True)

    def in_force_for(self, person_id: int) -> ConsentRecord | None:
        """Return the person's consent in force, or None (never given, or withdrawn)."""
        return self.in_force().filter(person_id=person_id).select_related("text").first()


class ConsentRecord(models.Model):
    """What one person allowed under one consent text version, from `given_at` (until withdrawn)."""

    person = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="consents")
    text = models.ForeignKey(ConsentText, on_delete=models.PROTECT, related_name="records")
    research_evaluation = models.BooleanField(default=False)
    model_training = models.BooleanField(default=False)
    public_release = models.BooleanField(default=False)
    voice_prompt = models.BooleanField(default=False)
    given_at = models.DateTimeField(auto_now_add=True)
    # The newest record of the person; a takes's own record keeps the scopes it was recorded under.
    is_current = models.BooleanField(default=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    withdrawal_reason = models.TextField(blank=True)

    objects = ConsentRecordQuerySet.as_manager()

    class Meta:
        ordering = ["-given_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["person"], condition=models.Q(is_current=True), name="one_current_consent_per_person"
            )
        ]

    def __str__(self) -> str:
        return f"consent #{self.pk} of user {self.person_id} (text v{self.text.version})"

    @property
    def scopes(self) -> list[str]:
        """Return the scopes this record allows, in the studio's order."""
        return [scope for scope in SCOPES if getattr(self, scope)]

    @property
    def withdrawn(self) -> bool:
        return self.withdrawn_at is not None


class TakeUse(models.Model):
    """One take used by one export, dataset snapshot or study: the manifest lineage reads.

    Written in bulk when the export, snapshot or study is made (`record_uses`), so "what used this
    take" is one indexed lookup however large the studio; the user's object is named by its kind
    and primary key (the tables sit in later layers, which this one may not name).
    """

    GOLD_EXPORT = "gold_export"  # a gold export job (webapp.Job)
    SNAPSHOT = "snapshot"  # ml.DatasetSnapshot
    STUDY = "study"  # evaluation.Study
    KINDS = ((GOLD_EXPORT, "Gold export"), (SNAPSHOT, "Dataset snapshot"), (STUDY, "Listening study"))

    # CASCADE: the manifest never keeps a take alive; the take's own rules decide whether it may go.
    take = models.ForeignKey("annotation.Take", on_delete=models.CASCADE, related_name="uses")
    kind = models.CharField(max_length=16, choices=KINDS)
    used_by = models.PositiveBigIntegerField(help_text="Primary key of the export job, snapshot or study")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["kind", "used_by"], name="take_use_by_user")]

    def __str__(self) -> str:
        return f"take {self.take_id} used by {self.kind} #{self.used_by}"


USES_BATCH = 5000


def record_uses(kind: str, used_by: int, take_ids: Iterable[int | None]) -> int:
    """Record that `used_by` (of `kind`) used each take of `take_ids` (None skipped, repeats once),
    in batches of plain INSERTs (no model instance per row: a 400,000-take snapshot's manifest is
    one of the costs of taking it). Return how many takes were recorded."""
    unique = sorted({int(take_id) for take_id in take_ids if take_id is not None})
    now = timezone.now()
    table = connection.ops.quote_name(TakeUse._meta.db_table)
    insert = f"INSERT INTO {table} (take_id, kind, used_by, created_at) VALUES (%s, %s, %s, %s)"
    # One transaction (the caller's, or its own): outside one SQLite commits every row alone.
    with transaction.atomic(), connection.cursor() as cursor:
        for start in range(0, len(unique), USES_BATCH):
            cursor.executemany(
                insert, [(take_id, kind, used_by, now) for take_id in unique[start : start + USES_BATCH]]
            )
    return len(unique)
