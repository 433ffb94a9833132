"""Giving and withdrawing consent (refusals, audit entries) and the one rule on takes it feeds."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.consent.models import (
    MODEL_TRAINING,
    PUBLIC_RELEASE,
    RESEARCH_EVALUATION,
    VOICE_PROMPT,
    ConsentRecord,
    ConsentText,
)
from annotation.recording.consent.workflows import ConsentProblem, give_consent, withdraw_consent
from annotation.recording.models import Item, Take
from tests.annotation.recording.support import upload
from tests.factories import ItemFactory, RecordingFactory, UserFactory
from webapp.models import AuditEntry, User
from webapp.roles import Role

pytestmark = pytest.mark.usefixtures("media_root")


@pytest.fixture
def newcomer(db: None) -> User:
    user: User = UserFactory.create(username="newcomer", role=Role.VOICE_ACTOR, role__consent=False)
    return user


def _take(actor: User) -> Take:
    take: Take = RecordingFactory.create(actor=actor, consent=ConsentRecord.objects.in_force_for(actor.pk))
    return take


def _ids(scope: str) -> set[int]:
    return set(Take.objects.consented_for(scope).values_list("pk", flat=True))


def test_consent_is_recorded_with_its_text_version_and_an_audit_entry(newcomer: User) -> None:
    text = ConsentText.current()
    record = give_consent(newcomer, [RESEARCH_EVALUATION, VOICE_PROMPT], text.version)
    assert record.scopes == [RESEARCH_EVALUATION, VOICE_PROMPT] and record.text == text and record.is_current
    (entry,) = AuditEntry.objects.filter(action="consent.given")
    assert entry.actor_id == newcomer.pk and entry.object_id == str(record.pk)
    assert entry.before is None and entry.after is not None
    assert entry.after["scopes"] == [RESEARCH_EVALUATION, VOICE_PROMPT]
    # A second consent replaces it as the current one; the first stays, as history.
    again = give_consent(newcomer, [RESEARCH_EVALUATION], text.version)
    assert list(ConsentRecord.objects.current().filter(person=newcomer)) == [again]
    assert ConsentRecord.objects.filter(person=newcomer).count() == 2


@pytest.mark.parametrize(
    ("scopes", "version_offset", "says"),
    [
        ([], 0, "Tick at least one use"),
        (["fame"], 0, "Unknown consent scope"),
        ([MODEL_TRAINING], -1, "changed"),
    ],
)
def test_refused_consent_records_nothing(
    newcomer: User, scopes: list[str], version_offset: int, says: str
) -> None:
    ConsentText.objects.create(version=ConsentText.current().version + 1, body="A newer text.")
    entries = AuditEntry.objects.count()  # (the fixtures' role grants have theirs)
    with pytest.raises(ConsentProblem, match=says):
        give_consent(newcomer, scopes, ConsentText.current().version + version_offset)
    assert not ConsentRecord.objects.exists() and AuditEntry.objects.count() == entries


def test_withdrawal_on_someones_behalf_needs_an_admin_and_a_reason(
    newcomer: User, users: dict[str, User]
) -> None:
    give_consent(newcomer, [RESEARCH_EVALUATION], ConsentText.current().version)
    with pytest.raises(ConsentProblem, match="Only the person"):
        withdraw_consent(newcomer, by=users["reviewer"], reason="they asked")
    with pytest.raises(ConsentProblem, match="Say why"):
        withdraw_consent(newcomer, by=users["admin"], reason="  ")
    assert not AuditEntry.objects.filter(action="consent.withdrawn").exists()
    record = withdraw_consent(newcomer, by=users["admin"], reason="asked by email")
    assert record.withdrawn_by == users["admin"] and record.withdrawal_reason == "asked by email"
    (entry,) = AuditEntry.objects.filter(action="consent.withdrawn")
    assert entry.actor_id == users["admin"].pk and entry.after is not None
    assert entry.after["withdrawal_reason"] == "asked by email"
    with pytest.raises(ConsentProblem, match="no consent in force"):
        withdraw_consent(newcomer, by=newcomer)


def test_takes_from_before_consent_records_count_for_research_until_consent_says_otherwise(
    newcomer: User,
) -> None:
    old = _take(newcomer)  # recorded before the studio kept consent: no record at all
    assert old.consent is None
    assert old.pk in _ids(RESEARCH_EVALUATION) and old.pk in _ids(MODEL_TRAINING)
    assert old.pk not in _ids(PUBLIC_RELEASE)
    give_consent(newcomer, [RESEARCH_EVALUATION, PUBLIC_RELEASE], ConsentText.current().version)
    # Under consent now: what the current consent grants (public release needs it given).
    assert old.pk in _ids(RESEARCH_EVALUATION) and old.pk not in _ids(MODEL_TRAINING)
    assert old.pk in _ids(PUBLIC_RELEASE)


def test_a_take_keeps_the_scopes_it_was_recorded_under_and_narrowing_consent_narrows_it(
    newcomer: User,
) -> None:
    version = ConsentText.current().version
    give_consent(newcomer, [RESEARCH_EVALUATION], version)
    narrow = _take(newcomer)
    give_consent(newcomer, [RESEARCH_EVALUATION, MODEL_TRAINING, PUBLIC_RELEASE], version)
    wide = _take(newcomer)
    assert narrow.pk not in _ids(MODEL_TRAINING), "consent widened later does not reach an older take"
    assert wide.pk in _ids(MODEL_TRAINING) and wide.pk in _ids(PUBLIC_RELEASE)
    give_consent(newcomer, [RESEARCH_EVALUATION], version)
    assert wide.pk not in _ids(MODEL_TRAINING) and wide.pk in _ids(RESEARCH_EVALUATION)


def test_after_withdrawal_only_takes_under_a_new_consent_count(newcomer: User) -> None:
    version = ConsentText.current().version
    legacy = _take(newcomer)
    give_consent(newcomer, [RESEARCH_EVALUATION], version)
    before = _take(newcomer)
    withdraw_consent(newcomer, by=newcomer)
    assert not {legacy.pk, before.pk} & _ids(RESEARCH_EVALUATION)
    give_consent(newcomer, [RESEARCH_EVALUATION], version)
    after = _take(newcomer)
    assert _ids(RESEARCH_EVALUATION) & {legacy.pk, before.pk, after.pk} == {after.pk}
    assert set(Take.objects.refused_for(RESEARCH_EVALUATION).values_list("pk", flat=True)) == {
        legacy.pk,
        before.pk,
    }


def test_an_unknown_scope_is_a_programming_error(db: None) -> None:
    with pytest.raises(ValueError, match="unknown consent scope"):
        Take.objects.consented_for("fame")


def test_the_record_page_and_the_upload_api_wait_for_consent(newcomer: User, take_wav: bytes) -> None:
    item = ItemFactory.create(actor=newcomer, state=Item.State.RECORDING)
    client = Client()
    client.force_login(newcomer)
    page = client.get(reverse("annotation:record_item", args=[item.external_id]))
    assert page.status_code == 302
    assert page["Location"].startswith(reverse("annotation:my_consent") + "?next=")
    refused = upload(client, item, take_wav)
    assert refused.status_code == 409 and "consent" in refused.json()["detail"]
    assert not Take.objects.filter(item=item).exists()
    give_consent(newcomer, [RESEARCH_EVALUATION], ConsentText.current().version)
    assert client.get(reverse("annotation:record_item", args=[item.external_id])).status_code == 200
    assert upload(client, item, take_wav).status_code == 201
    assert Take.objects.get(item=item).consent == ConsentRecord.objects.in_force_for(newcomer.pk)
