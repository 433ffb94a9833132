"""A judge run's page never shows an admin who is still labelling an item the judge's raw answer on it
(a judge is shown the item's gold, and its answer can quote it)."""

from __future__ import annotations

from django.urls import reverse

from annotation.labelling.models import Annotation
from evaluation.judging.models import JudgeRun
from tests.factories import AnnotationFactory, JudgementFactory, ModelOutputFactory
from webapp.models import User
from webapp.roles import Role, grant_role

GOLD_QUOTE = "the gold says: she needs to be heard"


def _run_with_an_error_on(item_output: object, admin: User) -> JudgeRun:
    judgement = JudgementFactory.create(output=item_output, error_kind="not_json", raw_text=GOLD_QUOTE)
    run = JudgeRun.objects.create(
        system=judgement.output.system, benchmark_version="echoeval-v1", judge_config=judgement.judge_config
    )
    judgement.run = run
    judgement.save(update_fields=["run"])
    return run


def test_an_admin_still_labelling_the_item_sees_no_raw_answer(users: dict[str, User], client_for) -> None:
    admin = users["admin"]
    grant_role(admin, Role.ANNOTATOR)
    output = ModelOutputFactory.create()
    AnnotationFactory.create(item=output.item, annotator=admin, status=Annotation.Status.DRAFT)
    run = _run_with_an_error_on(output, admin)
    page = client_for("admin").get(reverse("evaluation:judge_run_detail", args=[run.pk])).content.decode()
    assert GOLD_QUOTE not in page
    assert 'data-testid="raw-hidden"' in page


def test_an_admin_not_labelling_it_reads_the_raw_answer(users: dict[str, User], client_for) -> None:
    run = _run_with_an_error_on(ModelOutputFactory.create(), users["admin"])
    page = client_for("admin").get(reverse("evaluation:judge_run_detail", args=[run.pk])).content.decode()
    assert GOLD_QUOTE in page
