"""Screening raters in a study and the admin's decision to exclude one, seen in every figure."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from evaluation.studies.models import StudyRater
from evaluation.studies.reports import screen_study, study_figures, summarise_study
from tests.evaluation.studies.support import build_world, make_study, rate_everything
from webapp.roles import Role


def attentive(assignment, dimension):
    stimulus = assignment.stimulus
    if stimulus.kind == "trap":
        return 2
    bonus = stimulus.item_id % 2  # items differ, so raters agree on more than a constant
    return (4 if stimulus.system.name.endswith("A") else 2) + bonus


@pytest.fixture
def rated_study(make_user, users):
    world = build_world(make_user, n_systems=2, n_items=3)
    careful = [users["evaluator"], make_user(Role.EVALUATOR, "careful2")]
    sloppy = make_user(Role.EVALUATOR, "sloppy")
    study = make_study(
        world,
        [*careful, sloppy],
        users["admin"],
        items_per_system=3,
        training_count=0,
        dimensions=["naturalness"],
    )
    for rater in careful:
        rate_everything(study, rater, attentive)
    rate_everything(study, sloppy, lambda assignment, dimension: 3)
    return study, sloppy


def test_a_straight_liner_who_failed_the_trap_is_flagged_with_reasons(rated_study):
    study, _sloppy = rated_study
    reports = {report.rater: report for report in screen_study(study)}
    assert reports["sloppy"].reasons == (
        "failed 1 of 1 trapping items",
        "straight-lining on Naturalness: variance 0.00 < 0.1 over 6 ratings",
    )
    assert not reports["evaluator"].flagged and not reports["careful2"].flagged


def test_the_admin_sees_the_flags_and_excluding_a_rater_changes_every_figure(rated_study, client_for, users):
    study, sloppy = rated_study
    admin = client_for("admin")
    results = reverse("evaluation:study_results", args=[study.pk])
    page = admin.get(results).content.decode()
    assert "failed 1 of 1 trapping items" in page
    assert "n = 3/3 outputs · 9 ratings" in page

    before = summarise_study(study).cell("SecretSystemA", "naturalness")
    response = admin.post(
        reverse("evaluation:rater_decision", args=[study.pk, sloppy.pk]),
        {"decision": "exclude", "note": "trap"},
    )
    assert response.status_code == 302
    seat = StudyRater.objects.get(study=study, evaluator=sloppy)
    assert (seat.decision, seat.decided_by, seat.decision_note) == ("exclude", users["admin"], "trap")

    page = admin.get(results).content.decode()
    assert "n = 3/3 outputs · 6 ratings" in page and "1 excluded: sloppy" in page
    after = summarise_study(study).cell("SecretSystemA", "naturalness")
    # A's items score 4 or 5 by the careful raters; sloppy's 3s pulled every output's mean down
    assert after.mean is not None and before.mean is not None
    assert after.mean > before.mean and after.n_ratings == 6

    table = list(
        csv.DictReader(
            io.StringIO(admin.get(reverse("evaluation:study_results_csv", args=[study.pk])).content.decode())
        )
    )
    mos = [row for row in table if row["figure"] == "mos"]
    assert {row["n_ratings"] for row in mos} == {"6"}
    assert [row["figure"] for row in table].count("krippendorff_alpha_ordinal") == 1

    admin.post(reverse("evaluation:rater_decision", args=[study.pk, sloppy.pk]), {"decision": "include"})
    assert summarise_study(study).cell("SecretSystemA", "naturalness").n_ratings == 9


def test_the_results_page_shows_table_chart_data_and_tests(rated_study, client_for):
    study, _ = rated_study
    page = client_for("admin").get(reverse("evaluation:study_results", args=[study.pk])).content.decode()
    assert 'data-testid="mos-table"' in page and 'id="mos-chart-data"' in page
    assert "Audio (MOS)" in page and "Naturalness" in page
    assert "SecretSystemA" in page  # the admin is not blind
    assert 'data-testid="pairwise"' in page and "Krippendorff" in page


def test_cached_figures_follow_new_ratings(make_user, users):
    world = build_world(make_user, n_systems=2, n_items=2)
    study = make_study(world, [users["evaluator"]], users["admin"], training_count=0, dimensions=["prosody"])
    assert study_figures(study)[1].n_ratings == 0
    rate_everything(study, users["evaluator"], attentive)
    screening, summary = study_figures(study)
    assert summary.n_ratings == 4 and [report.rater for report in screening] == ["evaluator"]
