"""The audit log: one append-only entry per state change, written in the change's own transaction.

Workflow functions call `record` inside the `transaction.atomic()` block that makes the change
(not from a signal, which may run outside it), so a change that rolls back leaves no entry and an
entry never stands for a change that did not happen. A refused request changes nothing and so
records nothing.

    with transaction.atomic():
        before = fields_of(take, "status")
        take.status = "accepted"
        take.save(update_fields=["status"])
        record(actor=request.user, action=TAKE_STATUS, obj=take, before=before, after=fields_of(take, "status"))
"""

from __future__ import annotations

from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models

from webapp.models import AuditEntry

# The actions the studio records; the log's filter lists them. Other apps may record their own
# (a dotted `object.change` name), these are the ones the issue names.
TAKE_STATUS = "take.status"
REVIEW_VERDICT = "review.verdict"
ANNOTATION_SUBMIT = "annotation.submit"
ANNOTATION_REOPEN = "annotation.reopen"
GOLD_VERSION = "gold.version"
RATING = "rating"
SPOT_CHECK = "spot_check.decision"
ROLE_GRANT = "role.grant"
TOKEN_CREATED = "token.created"
TOKEN_REVOKED = "token.revoked"
JOB_STARTED = "job.started"
JOB_CANCELLED = "job.cancelled"
CONSENT_GIVEN = "consent.given"
CONSENT_WITHDRAWN = "consent.withdrawn"
ARCHIVE = "archive"
RESTORE = "restore"

KNOWN_ACTIONS = (
    TAKE_STATUS,
    REVIEW_VERDICT,
    ANNOTATION_SUBMIT,
    ANNOTATION_REOPEN,
    GOLD_VERSION,
    RATING,
    SPOT_CHECK,
    ROLE_GRANT,
    TOKEN_CREATED,
    TOKEN_REVOKED,
    JOB_STARTED,
    JOB_CANCELLED,
    CONSENT_GIVEN,
    CONSENT_WITHDRAWN,
    ARCHIVE,
    RESTORE,
)


def record(
    *,
    actor: Any,
    action: str,
    obj: models.Model,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEntry:
    """Append one entry: `actor` (a user, or None / an anonymous user for the system) did `action`
    to `obj`, whose recorded fields went from `before` to `after` (None: the object did not exist
    before, or does not after). Call it inside the transaction that makes the change."""
    signed_in = actor is not None and getattr(actor, "is_authenticated", False)
    return AuditEntry.objects.create(
        actor=actor if signed_in else None,
        actor_name=(actor.get_username() if signed_in else "")[:150],
        action=action,
        content_type=ContentType.objects.get_for_model(obj, for_concrete_model=False),
        object_id=str(obj.pk),
        object_repr=str(obj)[:200],
        before=before,
        after=after,
    )


def fields_of(obj: models.Model, *names: str) -> dict[str, Any]:
    """Return `obj`'s fields `names` as JSON-ready values (a foreign key as its id), for `record`."""
    values: dict[str, Any] = {}
    for name in names:
        field = obj._meta.get_field(name)
        values[name] = (
            getattr(obj, field.attname) if isinstance(field, models.ForeignKey) else getattr(obj, name)
        )
    return values
