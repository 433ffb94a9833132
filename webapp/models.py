"""Project-wide models: the user (with roles as groups) and the Job every long task reports to."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar, Self, TypeVar

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.contrib.sessions.base_session import AbstractBaseSession
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from webapp.lib import row_outcome


class ShortcutKeys(models.TextChoices):
    """How the pages' single-character shortcuts (a, r, 1-7, Space, +) answer (WCAG 2.1.4)."""

    SINGLE = "single", "Single keys (a, r, 1-7, Space)"
    MODIFIER = "modifier", "Only with Alt held (Alt+a, Alt+1, ...)"
    OFF = "off", "Off"


class User(AbstractUser):
    """A person using EchoStudio; what they may do comes from their groups (see webapp.roles)."""

    display_name = models.CharField(max_length=150, blank=True)
    # Read by static/js/shortcuts.js through <body data-shortcuts>, before any page's own keys.
    shortcut_keys = models.CharField(max_length=10, choices=ShortcutKeys.choices, default=ShortcutKeys.SINGLE)

    def __str__(self) -> str:
        return self.display_name or self.username


class UserSession(AbstractBaseSession):
    """A login session that names its signed-in user in a column (kept from the session's data on
    every save), so one read finds the session, the user and their roles (`webapp.sessions`)."""

    user = models.ForeignKey(User, null=True, blank=True, on_delete=models.CASCADE, related_name="+")

    @classmethod
    def get_session_store_class(cls) -> type[Any]:
        from webapp.sessions import SessionStore

        return SessionStore


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    # The three ends of a job over many rows are `webapp.lib.row_outcome`'s vocabulary.
    SUCCEEDED = row_outcome.SUCCEEDED, row_outcome.LABELS[row_outcome.SUCCEEDED]
    FINISHED_WITH_ERRORS = (
        row_outcome.FINISHED_WITH_ERRORS,
        row_outcome.LABELS[row_outcome.FINISHED_WITH_ERRORS],
    )
    FAILED = row_outcome.FAILED, row_outcome.LABELS[row_outcome.FAILED]
    CANCELLED = "cancelled", "Cancelled"


FINISHED_STATUSES = frozenset(
    {JobStatus.SUCCEEDED, JobStatus.FINISHED_WITH_ERRORS, JobStatus.FAILED, JobStatus.CANCELLED}
)


class Job(models.Model):
    """One long-running task: what it is, where it stands, and how it ended."""

    kind = models.CharField(max_length=64, db_index=True)
    queue = models.CharField(max_length=32, default="default")
    status = models.CharField(
        max_length=24, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True
    )
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=500, blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    metrics = models.JSONField(default=list, blank=True, help_text="Time series of {step, name: value}")
    log = models.TextField(blank=True)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid of the process running it")
    attempts = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    enqueued_at = models.DateTimeField(
        null=True, blank=True, help_text="When its id last reached the broker; empty while no send has"
    )
    sends = models.PositiveIntegerField(
        default=0, help_text="How often its id reached the broker since it was last queued (capped)"
    )
    provenance = models.JSONField(
        default=dict,
        blank=True,
        help_text="What its last attempt ran with: project commit, torch, transformers, peft versions",
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["kind", "status"])]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        """Return True once the job has ended, whichever way."""
        return self.status in FINISHED_STATUSES

    @property
    def percent(self) -> int:
        """Return progress as a whole percentage for display."""
        return round(max(0.0, min(1.0, self.progress)) * 100)

    def is_stale(self, now: Any = None) -> bool:
        """Return True when the job claims to run but its worker stopped sending heartbeats."""
        if self.status != JobStatus.RUNNING:
            return False
        now = now or timezone.now()
        last_sign_of_life = self.heartbeat_at or self.started_at or self.created_at
        return bool(now - last_sign_of_life > timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS))


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def usable(self) -> ApiTokenQuerySet:
        """Return tokens that still authenticate: not revoked, not expired, of an active user."""
        return self.filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=timezone.now()),
            revoked_at__isnull=True,
            user__is_active=True,
        )


class ApiToken(models.Model):
    """A personal API token for scripts; only its SHA-256 digest is stored (see webapp.api.tokens)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'training pipeline'")
    prefix = models.CharField(max_length=12, help_text="The token's first characters, to recognise it")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Blank: until revoked")
    read_only = models.BooleanField(
        default=False, help_text="Only reads (GET, HEAD, OPTIONS): every write with it is refused"
    )

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"


class IdempotentRequest(models.Model):
    """An API write sent with an `Idempotency-Key`, and the answer it got (webapp.idempotency).

    Stored in the same transaction as the write itself, so a client that lost the answer (a killed
    web worker, a dropped connection) can send the request again and be told what happened
    instead of applying it twice.
    """

    principal = models.CharField(max_length=80, help_text="Who sent it: a user id or a token digest")
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the method, path and body")
    status_code = models.PositiveSmallIntegerField(default=0)
    content_type = models.CharField(max_length=200, blank=True)
    body = models.BinaryField(default=b"")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["principal", "key"], name="idempotency_key_once_per_principal")
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.status_code})"


class EndpointUrlChange(models.Model):
    """One change of a configured endpoint's URL (judge, build LLM, classifier, TTS): who, when,
    from what to what. Written by `webapp.outbound.record_url_changes`; never edited."""

    endpoint = models.CharField(max_length=200, help_text="What was changed, e.g. “judge lab: base_url”")
    old_url = models.CharField(max_length=500, blank=True)
    new_url = models.CharField(max_length=500, blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.endpoint}: {self.old_url or '—'} → {self.new_url or '—'}"


class AudioFetch(models.Model):
    """Bytes of one stored audio file the server sent one person: a whole-file answer or an HTTP
    range (`webapp.storage.serve_signed_media`). Append-only: the listening gates
    (`webapp.listening`) merge a person's rows for a file to learn whether they fetched all of it,
    and when they first did."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=300, help_text="The storage key of the audio")
    first_byte = models.BigIntegerField()
    last_byte = models.BigIntegerField(help_text="Inclusive, as in Content-Range")
    size = models.BigIntegerField(help_text="The file's size when it was served")
    fetched_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user", "key"], name="audio_fetch_user_key")]

    def __str__(self) -> str:
        return f"{self.key} {self.first_byte}-{self.last_byte}/{self.size} to {self.user_id}"


class AppendOnlyError(RuntimeError):
    """Raised when code tries to change or delete a row of an append-only record (the audit log)."""


class AuditEntryQuerySet(models.QuerySet["AuditEntry"]):
    """Reads only: the audit log is written one entry at a time by `webapp.audit.record`."""

    def update(self, **kwargs: Any) -> int:
        raise AppendOnlyError("Audit entries are never changed")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("Audit entries are never deleted")

    def bulk_update(self, *args: Any, **kwargs: Any) -> int:
        raise AppendOnlyError("Audit entries are never changed")


class AuditEntry(models.Model):
    """One state change: who made it, when, to what object, and the object's fields before and after.

    Append-only: the model and its queryset refuse updates and deletes, and in production the
    table is written by a database user that may only INSERT and SELECT it (docs/deployment.md).
    The actor and the object are kept by id without a foreign-key constraint, and their names are
    kept as text, so nothing deleted elsewhere ever has to change an entry.
    """

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text="Empty for the system (a worker, a schedule, a command run without a user)",
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64, db_index=True, help_text="What happened, e.g. “take.status”")
    content_type = models.ForeignKey(
        "contenttypes.ContentType", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200)
    before = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    after = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-pk"]
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["content_type", "object_id"], name="audit_object")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action} {self.object_repr}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("Audit entries are never changed")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("Audit entries are never deleted")


class WorkProductDeleteError(RuntimeError):
    """Raised when code tries to hard-delete a work product; archive it instead (`webapp.archive`)."""


_Row = TypeVar("_Row", bound=models.Model, covariant=True)


class ArchivableQuerySet(models.QuerySet[_Row]):
    """The queryset of every work product. `in_use()` is the one rule for what queues, exports,
    studies and leaderboards may read: rows not archived (and, given paths, whose parents along
    those paths are not archived either). Work products are never deleted, in bulk or one by one."""

    def in_use(self, *through: str) -> Self:
        """Return the rows in use: not archived, nor is any row along the foreign-key paths
        `through` (e.g. `Take.objects.in_use("item")`: takes of items in use)."""
        return self.filter(in_use_filter(*through))

    def archived(self) -> Self:
        """Return the archived rows themselves (their parents aside)."""
        return self.filter(archived_at__isnull=False)

    def delete(self) -> tuple[int, dict[str, int]]:
        if getattr(self.model, "work_product", True):
            raise WorkProductDeleteError(f"{self.model.__name__} rows are archived, never deleted")
        return super().delete()


def in_use_filter(*through: str, prefix: str = "") -> models.Q:
    """Return the condition `ArchivableQuerySet.in_use` filters on, for use inside a related lookup
    or an annotation `prefix` away (e.g. "reviews__"): the row itself, and each row along the
    paths `through`, has no `archived_at`."""
    condition = models.Q(**{f"{prefix}archived_at__isnull": True})
    for path in through:
        condition &= models.Q(**{f"{prefix}{path}__archived_at__isnull": True})
    return condition


class Archivable(models.Model):
    """A work product (a take, a review, a label, a gold version, a rating, a judgement, an output,
    a spot-check): removing it archives it, with who, when and why, and restoring it clears that.
    `webapp.archive.archive` and `.restore` do both, with an audit entry."""

    archived_at = models.DateTimeField(null=True, blank=True, db_index=True, editable=False)
    archived_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        editable=False,
    )
    # db_default: set-based imports (the item file's COPY) name only their own columns.
    archive_reason = models.CharField(max_length=500, blank=True, default="", db_default="", editable=False)

    # False for a row people's work hangs under without being work itself (an item's script): it
    # may be deleted while nothing is attached, and PROTECT on the relations keeps it once anything is.
    work_product: ClassVar[bool] = True

    class Meta:
        abstract = True

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        if self.work_product:
            raise WorkProductDeleteError(f"{type(self).__name__} rows are archived, never deleted")
        return super().delete(*args, **kwargs)
