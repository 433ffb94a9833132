"""The judge audit page and command: admins only, figures with n and intervals, charts, refusals."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from evaluation.results.judge_audit import start_judge_audit
from evaluation.results.models import JudgeAudit
from tests.evaluation.results.audit_support import audited_system
from webapp.jobs import run_job
from webapp.models import Job

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole")


@pytest.fixture
def finished_audit() -> JudgeAudit:
    audited_system(3)
    heuristic = JudgeConfig.objects.create(name="heuristic", offline_heuristic=True)
    audit = start_judge_audit(heuristic, "echoeval-v1", repeats=2)
    assert audit.job is not None
    run_job(audit.job.pk)
    audit.refresh_from_db()
    return audit


def test_audit_pages_open_for_admins_only(client: Client, client_for, finished_audit: JudgeAudit) -> None:
    for url in (
        reverse("evaluation:judge_audits"),
        reverse("evaluation:judge_audit", args=[finished_audit.pk]),
    ):
        anonymous = client.get(url)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
        got = {role: client_for(role).get(url).status_code for role in ROLES}
        assert got == {role: 200 if role == "admin" else 403 for role in ROLES}, url
    heuristic = JudgeConfig.objects.get(name="heuristic")
    for role in ROLES:
        if role != "admin":
            refused = client_for(role).post(
                reverse("evaluation:judge_audits"),
                {"judge": heuristic.pk, "version": "echoeval-v1", "repeats": 2, "max_outputs": 3},
            )
            assert refused.status_code == 403
    assert JudgeAudit.objects.count() == 1


def test_the_audit_page_shows_every_figure_with_n_and_an_interval_as_charts(
    client_for, finished_audit: JudgeAudit
) -> None:
    page = client_for("admin").get(reverse("evaluation:judge_audit", args=[finished_audit.pk]))
    html = page.content.decode()
    assert html.count('data-testid="audit-chart"') == 6
    assert "<svg" in html and "<circle" in html
    assert 'class="bias"' not in html  # the heuristic is not swayed by padding or field order
    charts = page.context["charts"]
    caps = dict((row["label"], row["figure"]) for row in charts[1][1]["rows"])
    assert caps["Wrong primary emotion (perception cap)"]["estimate"] == 1.0
    assert caps["Wrong primary emotion (perception cap)"]["n"] == 3
    for _, chart in charts:
        for row in chart["rows"]:
            assert row["figure"]["n"] >= 0 and ("low" in row["figure"]) and ("high" in row["figure"])


def test_an_admin_starts_an_audit_and_bad_input_is_refused(client_for, finished_audit: JudgeAudit) -> None:
    admin = client_for("admin")
    heuristic = JudgeConfig.objects.get(name="heuristic")
    started = admin.post(
        reverse("evaluation:judge_audits"),
        {"judge": heuristic.pk, "version": "echoeval-v1", "repeats": 2, "max_outputs": 3},
    )
    newest = JudgeAudit.objects.order_by("-pk").first()
    assert newest is not None and newest.pk != finished_audit.pk
    assert started.status_code == 302 and started["Location"] == reverse(
        "evaluation:judge_audit", args=[newest.pk]
    )
    refused = admin.post(
        reverse("evaluation:judge_audits"),
        {"judge": heuristic.pk, "version": "echoeval-v1", "repeats": 1, "max_outputs": 3},
    )
    assert refused.status_code == 200 and "repeats" in refused.context["form"].errors
    assert JudgeAudit.objects.count() == 2


def test_audit_judge_command_prints_figures_and_refuses_unknown_judges() -> None:
    audited_system(3)
    JudgeConfig.objects.create(name="heuristic", offline_heuristic=True)
    out = StringIO()
    call_command("audit_judge", "heuristic", "--repeats", "2", "--outputs", "3", stdout=out)
    text = out.getvalue()
    assert "Wrong primary emotion (perception cap): 1.000 [" in text and "n=3" in text
    out = StringIO()
    call_command("audit_judge", "heuristic", "--repeats", "2", "--outputs", "3", "--json", stdout=out)
    assert json.loads(out.getvalue())["caps"]["not_recommended"]["estimate"] == 1.0
    with pytest.raises(CommandError, match="nobody"):
        call_command("audit_judge", "nobody")
    assert Job.objects.filter(kind="judge_audit").count() == 2
