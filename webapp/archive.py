"""Archiving and restoring work products: the only way anything people made leaves the studio's use.

A work product (`webapp.models.Archivable`) is never deleted. Archiving it stamps who, when and
why; every queue, export, study and leaderboard reads `ArchivableQuerySet.in_use()` and so stops
seeing it; restoring clears the stamp and it is back, with everything under it untouched. Both
write an audit entry in the same transaction.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from webapp import audit
from webapp.models import Archivable, ArchivableQuerySet, User

ARCHIVE_FIELDS = ("archived_at", "archived_by", "archive_reason")


class ArchiveError(ValueError):
    """A request to archive or restore that cannot be done as asked (no reason, already so)."""


def archive(obj: Archivable, *, actor: User | None, reason: str) -> Archivable:
    """Archive `obj` with `reason` (required: the log says why), in one transaction with its audit entry."""
    reason = reason.strip()
    if not reason:
        raise ArchiveError("Say why it is archived: the reason is kept with it.")
    with transaction.atomic():
        row = type(obj)._default_manager.select_for_update().get(pk=obj.pk)
        if row.archived_at is not None:
            raise ArchiveError(f"{row} is already archived.")
        before = audit.fields_of(row, *ARCHIVE_FIELDS)
        row.archived_at = timezone.now()
        row.archived_by = actor
        row.archive_reason = reason[:500]
        row.save(update_fields=list(ARCHIVE_FIELDS))
        audit.record(
            actor=actor,
            action=audit.ARCHIVE,
            obj=row,
            before=before,
            after=audit.fields_of(row, *ARCHIVE_FIELDS),
        )
    _copy_stamp(row, obj)
    return obj


def restore(obj: Archivable, *, actor: User | None) -> Archivable:
    """Bring an archived `obj` back into use, in one transaction with its audit entry."""
    with transaction.atomic():
        row = type(obj)._default_manager.select_for_update().get(pk=obj.pk)
        if row.archived_at is None:
            raise ArchiveError(f"{row} is not archived.")
        before = audit.fields_of(row, *ARCHIVE_FIELDS)
        row.archived_at = None
        row.archived_by = None
        row.archive_reason = ""
        row.save(update_fields=list(ARCHIVE_FIELDS))
        audit.record(
            actor=actor,
            action=audit.RESTORE,
            obj=row,
            before=before,
            after=audit.fields_of(row, *ARCHIVE_FIELDS),
        )
    _copy_stamp(row, obj)
    return obj


def archive_rows(rows: ArchivableQuerySet, *, actor: User | None, reason: str) -> int:
    """Archive every row of `rows` still in use, with one audit entry each, and return how many.

    For a workflow that retires many rows at once (a re-import replacing outputs, a re-run
    re-judging errors); call it inside that workflow's transaction."""
    with transaction.atomic():
        targets = list(rows.in_use().select_for_update())
        if not targets:
            return 0
        now = timezone.now()
        for row in targets:
            before = audit.fields_of(row, *ARCHIVE_FIELDS)
            row.archived_at, row.archived_by, row.archive_reason = now, actor, reason[:500]
            audit.record(
                actor=actor,
                action=audit.ARCHIVE,
                obj=row,
                before=before,
                after=audit.fields_of(row, *ARCHIVE_FIELDS),
            )
        rows.model._default_manager.bulk_update(targets, list(ARCHIVE_FIELDS), batch_size=500)
    return len(targets)


def archived_note(total: int, in_use: int) -> str:
    """Return what a count shown over in-use rows says about the rest, e.g. “3 archived, not counted”."""
    archived = total - in_use
    return f"{archived} archived, not counted" if archived > 0 else ""


def _copy_stamp(source: Any, target: Any) -> None:
    for name in ARCHIVE_FIELDS:
        setattr(target, name, getattr(source, name))
