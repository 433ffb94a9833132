"""The audit log: one entry per state change of a scripted day of work, none for a refused request,
written in the change's own transaction, and never changed or deleted afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from annotation.gold.adjudication import adjudicate_item
from annotation.labelling.models import Annotation, AnnotationRevision
from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import submit_verdict
from evaluation.studies.workflows import submit_rating
from ml.builder.pages.queue import Decision, decide, draw_spot_checks
from tests.annotation.labelling.support import assign, perception, submitted, tom
from tests.annotation.recording.support import heard, record
from tests.evaluation.studies.support import build_world, current, make_study, play
from tests.factories import ItemFactory, speech_like_wav
from tests.ml.builder.pages.spotcheck_builds import finished_build, taken
from webapp import audit
from webapp.api.tokens import create_token, revoke_token
from webapp.archive import archive, restore
from webapp.jobs import cancel_job, start_job
from webapp.models import AppendOnlyError, AuditEntry, User
from webapp.roles import Role, grant_role


def actions_during(step: Callable[[], Any]) -> list[tuple[str, str]]:
    """Run `step` and return the (action, actor) of each entry it wrote, in order."""
    last = AuditEntry.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    step()
    return list(AuditEntry.objects.filter(pk__gt=last).order_by("pk").values_list("action", "actor_name"))


@pytest.fixture
def day(make_user: Callable[..., User], media_root: Any) -> dict[str, Any]:
    people: dict[str, Any] = {
        "admin": make_user(Role.ADMIN, "boss"),
        "actor": make_user(Role.VOICE_ACTOR, "voice"),
        "lead": make_user(Role.LEAD_ANNOTATOR, "leader"),
        "newcomer": make_user(None, "newcomer"),
        "evaluator": make_user(Role.EVALUATOR, "rater"),
    }
    people["reviewers"] = [make_user(Role.REVIEWER, f"rev{n}") for n in range(3)]
    return people


def test_a_day_of_work_writes_one_entry_per_state_change(day: dict[str, Any], make_user, settings) -> None:
    settings.SPEECH_CHECKS = False
    admin, actor, lead = day["admin"], day["actor"], day["lead"]
    item = ItemFactory.create(actor=actor, text="I love how great the day turned out.")

    # Record: the take is made (analysing) with its analysis job, then the worker sends it to review.
    made: list[Take] = []
    assert actions_during(lambda: made.append(record(actor, item, speech_like_wav()))) == [
        (audit.TAKE_STATUS, "voice"),
        (audit.JOB_STARTED, "voice"),
        (audit.TAKE_STATUS, ""),
    ]
    take = made[0]
    assert take.status == Take.Status.IN_REVIEW

    # Review x3: three verdicts, and the last one decides the take.
    heard(take)
    reviews = list(take.reviews.order_by("pk").select_related("reviewer"))
    assert len(reviews) == 3
    logged = actions_during(
        lambda: [submit_verdict(r.pk, r.reviewer, Review.Verdict.ACCEPT) for r in reviews]
    )
    names = [review.reviewer.username for review in reviews]
    assert logged == [
        (audit.REVIEW_VERDICT, names[0]),
        (audit.REVIEW_VERDICT, names[1]),
        (audit.REVIEW_VERDICT, names[2]),
        (audit.TAKE_STATUS, names[2]),
    ]
    decided = AuditEntry.objects.filter(action=audit.TAKE_STATUS).order_by("-pk").first()
    assert decided is not None
    assert (decided.before, decided.after) == ({"status": "in_review"}, {"status": "accepted"})
    assert decided.object_id == str(take.pk)

    # Annotate and submit: two annotators (assigned by hand), one entry per submit.
    annotators = [make_user(Role.ANNOTATOR, f"ann{n}") for n in range(2)]
    item.refresh_from_db()
    annotations = assign(item, *annotators)
    assert actions_during(lambda: [submitted(annotation) for annotation in annotations]) == [
        (audit.ANNOTATION_SUBMIT, "ann0"),
        (audit.ANNOTATION_SUBMIT, "ann1"),
    ]

    # Adjudicate gold.
    assert actions_during(
        lambda: adjudicate_item(
            item.pk, lead=lead, perception=perception(), tom=tom(), expected_gold_version=0, note="agreed"
        )
    ) == [(audit.GOLD_VERSION, "leader")]
    gold_entry = AuditEntry.objects.get(action=audit.GOLD_VERSION)
    assert gold_entry.before is None and (gold_entry.after or {})["version"] == 1

    # Rate one sample of a listening study.
    world = build_world(make_user, prefix="AUD")
    study = make_study(world, [day["evaluator"]], admin)
    assignment = current(study, day["evaluator"])
    play(assignment)
    scores = dict.fromkeys(study.dimensions, 4)
    assert actions_during(lambda: submit_rating(assignment.pk, scores)) == [(audit.RATING, "rater")]

    # Spot-check a builder sample: the decision, and the export its completed round starts.
    build = finished_build(single=3)
    draw_spot_checks(build, count=1)
    checker = make_user(Role.ANNOTATOR, "checker")
    check = taken(checker)
    assert actions_during(lambda: decide(check, checker, Decision("keep"))) == [
        (audit.SPOT_CHECK, "checker"),
        (audit.JOB_STARTED, "checker"),
    ]

    # Grant a role, make and revoke a token, start and cancel a job.
    assert actions_during(lambda: grant_role(day["newcomer"], Role.REVIEWER, actor=admin)) == [
        (audit.ROLE_GRANT, "boss")
    ]
    tokens: list[Any] = []
    assert actions_during(lambda: tokens.append(create_token(admin, "nightly export"))) == [
        (audit.TOKEN_CREATED, "boss")
    ]
    assert actions_during(lambda: revoke_token(admin, tokens[0].token.pk)) == [(audit.TOKEN_REVOKED, "boss")]
    jobs: list[Any] = []
    assert actions_during(lambda: jobs.append(start_job("diagnostic_sleep", started_by=admin))) == [
        (audit.JOB_STARTED, "boss")
    ]
    assert actions_during(lambda: cancel_job(jobs[0], actor=admin)) == [(audit.JOB_CANCELLED, "boss")]

    # Archive and restore the item.
    assert actions_during(lambda: archive(item, actor=admin, reason="script had a typo")) == [
        (audit.ARCHIVE, "boss")
    ]
    assert actions_during(lambda: restore(item, actor=admin)) == [(audit.RESTORE, "boss")]
    archived = AuditEntry.objects.get(action=audit.ARCHIVE)
    assert archived.after is not None and archived.after["archive_reason"] == "script had a typo"
    assert archived.before == {"archived_at": None, "archived_by": None, "archive_reason": ""}

    # Nothing the day made was lost on the way.
    assert Take.objects.filter(item=item).count() == 1
    assert Annotation.objects.filter(item=item, status=Annotation.Status.SUBMITTED).count() == 2
    assert AnnotationRevision.objects.filter(annotation__item=item).count() == 2
    assert item.gold_references.count() == 1


def test_refused_requests_write_no_entry(day: dict[str, Any], settings) -> None:
    settings.SPEECH_CHECKS = False
    actor, reviewer = day["actor"], day["reviewers"][0]
    take = record(actor, ItemFactory.create(actor=actor), speech_like_wav())
    review = take.reviews.get(reviewer=reviewer) if take.reviews.filter(reviewer=reviewer).exists() else None
    review = review or take.reviews.select_related("reviewer").first()
    assert review is not None
    before = AuditEntry.objects.count()

    # A verdict before the take was played to the end: refused, nothing written.
    client = Client()
    client.force_login(review.reviewer)
    url = reverse("annotation:api_review_verdict", args=[review.public_id])
    assert client.post(url, {"verdict": "accept"}).status_code == 409
    # A user without the role: refused.
    outsider = Client()
    outsider.force_login(day["newcomer"])
    assert outsider.post(url, {"verdict": "accept"}).status_code == 403
    # A job cancel by someone who is no admin; a token revoked by someone who does not own it.
    job = start_job("diagnostic_sleep", started_by=day["admin"])
    before = AuditEntry.objects.count()
    assert outsider.post(reverse("job_cancel", args=[job.pk])).status_code in (302, 403)
    assert not revoke_token(day["newcomer"], create_token(day["admin"], "mine").token.pk)
    assert AuditEntry.objects.count() == before + 1  # only the token's creation
    # The admin's archive action without a reason only asks for one.
    admin = Client()
    admin.force_login(day["admin"])
    changelist = reverse("admin:annotation_take_changelist")
    answer = admin.post(
        changelist, {"action": "archive_selected", "_selected_action": [take.pk], "apply": "1"}
    )
    assert answer.status_code == 200 and b"Say why" in answer.content
    assert AuditEntry.objects.count() == before + 1
    assert Take.objects.get(pk=take.pk).archived_at is None
    assert Review.objects.get(pk=review.pk).verdict == Review.Verdict.PENDING


def test_an_entry_rolls_back_with_its_change(day: dict[str, Any]) -> None:
    item = ItemFactory.create()
    before = AuditEntry.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        archive(item, actor=day["admin"], reason="mistake")
        raise RuntimeError("the surrounding work failed")
    assert AuditEntry.objects.count() == before
    assert Item.objects.get(pk=item.pk).archived_at is None


def test_entries_are_never_changed_or_deleted(day: dict[str, Any]) -> None:
    archive(ItemFactory.create(), actor=day["admin"], reason="typo")
    entry = AuditEntry.objects.latest("pk")
    entry.action = "something else"
    with pytest.raises(AppendOnlyError):
        entry.save()
    with pytest.raises(AppendOnlyError):
        entry.delete()
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entry.pk).update(action="rewritten")
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.get(pk=entry.pk).action == audit.ARCHIVE


def test_admins_filter_the_log_and_export_it_as_csv(day: dict[str, Any], client_for, users) -> None:
    admin = day["admin"]
    first, second = ItemFactory.create(external_id="=HYPERLINK(1)"), ItemFactory.create()
    archive(first, actor=admin, reason="dup")
    archive(second, actor=admin, reason="dup")
    restore(second, actor=admin)
    client = Client()
    client.force_login(admin)
    listing = client.get(reverse("admin:webapp_auditentry_changelist"), {"action": audit.RESTORE})
    assert listing.status_code == 200
    assert listing.context["cl"].result_count == 1
    exported = client.get(reverse("admin:webapp_auditentry_export"), {"action": audit.ARCHIVE})
    assert exported.status_code == 200
    rows = b"".join(exported.streaming_content).decode().splitlines()  # type: ignore[attr-defined]
    assert rows[0].startswith("at,actor,action,object_type")
    assert len(rows) == 3
    assert all(",archive,annotation.item," in row for row in rows[1:])
    assert any("'=HYPERLINK(1)" in row for row in rows[1:])  # neutralised, never a live formula
    # Nobody edits or deletes an entry, and only admins read the log.
    entry = AuditEntry.objects.latest("pk")
    assert (
        client.post(reverse("admin:webapp_auditentry_delete", args=[entry.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert AuditEntry.objects.filter(pk=entry.pk).exists()
    for name in ("reviewer", "annotator", "norole"):
        assert client_for(name).get(reverse("admin:webapp_auditentry_export")).status_code in (302, 403)
