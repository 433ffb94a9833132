"""Giving and withdrawing consent, each with its audit entry in the same transaction."""

from __future__ import annotations

from collections.abc import Collection

from django.db import transaction
from django.utils import timezone

from annotation.recording.consent.models import SCOPES, ConsentRecord, ConsentText
from webapp import audit
from webapp.models import User
from webapp.roles import Role, has_role


class ConsentProblem(ValueError):
    """The consent cannot be given or withdrawn as asked; the message says why, for the person."""


def give_consent(person: User, scopes: Collection[str], text_version: int) -> ConsentRecord:
    """Record the person's consent to `scopes` under the text they read (`text_version`), as their
    new current record. Refused when no scope is ticked or the text changed while they read it."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise ConsentProblem(f"Unknown consent scope: {', '.join(unknown)}.")
    if not scopes:
        raise ConsentProblem("Tick at least one use you allow, or leave the page without consenting.")
    with transaction.atomic():
        text = ConsentText.current()
        if text.version != text_version:
            raise ConsentProblem(
                f"The consent text changed to version {text.version} while you read version "
                f"{text_version}: read the new text and tick your choices again."
            )
        # The person's row locked: two tabs consenting at once make one current record, the later one.
        User.objects.select_for_update().filter(pk=person.pk).first()
        previous = list(ConsentRecord.objects.filter(person=person, is_current=True))
        ConsentRecord.objects.filter(pk__in=[record.pk for record in previous]).update(is_current=False)
        record = ConsentRecord.objects.create(
            person=person, text=text, is_current=True, **{scope: scope in scopes for scope in SCOPES}
        )
        audit.record(
            actor=person,
            action=audit.CONSENT_GIVEN,
            obj=record,
            before=_state(previous[0]) if previous else None,
            after=_state(record),
        )
    return record


def may_withdraw_for(viewer: User, person: User) -> bool:
    """Return whether `viewer` may withdraw `person`'s consent: the person, or an admin for them."""
    return viewer.pk == person.pk or has_role(viewer, Role.ADMIN)


def withdraw_consent(person: User, *, by: User, reason: str = "") -> ConsentRecord:
    """Withdraw every consent of `person` (by themselves, or by an admin on their behalf with a
    reason); return their current record, now withdrawn. From now on none of their takes is
    `consented_for` any use; what used them before is `ml.jobs.lineage`'s report."""
    reason = reason.strip()
    if not may_withdraw_for(by, person):
        raise ConsentProblem("Only the person, or an admin on their behalf, may withdraw their consent.")
    if by.pk != person.pk and not reason:
        raise ConsentProblem("Say why you withdraw this person's consent on their behalf (for the record).")
    with transaction.atomic():
        User.objects.select_for_update().filter(pk=person.pk).first()
        records = list(ConsentRecord.objects.filter(person=person).order_by("pk"))
        current = next((record for record in records if record.is_current), None)
        if current is None or current.withdrawn:
            raise ConsentProblem(f"{person.get_username()} has no consent in force to withdraw.")
        before = _state(current)
        now = timezone.now()
        ConsentRecord.objects.filter(person=person, withdrawn_at__isnull=True).update(
            withdrawn_at=now, withdrawn_by=by, withdrawal_reason=reason
        )
        current.refresh_from_db()
        audit.record(
            actor=by, action=audit.CONSENT_WITHDRAWN, obj=current, before=before, after=_state(current)
        )
    return current


def _state(record: ConsentRecord) -> dict[str, object]:
    return {
        "scopes": record.scopes,
        "text_version": record.text.version,
        "withdrawn_at": record.withdrawn_at.isoformat() if record.withdrawn_at else None,
        "withdrawal_reason": record.withdrawal_reason,
    }
