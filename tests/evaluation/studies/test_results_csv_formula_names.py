"""A study's results CSV writes formula-like system names as text and its estimates as numbers."""

from __future__ import annotations

import csv
import io

from django.urls import reverse

from evaluation.outputs.models import System
from tests.evaluation.studies.support import build_world, from_system, make_study, rate_everything
from webapp.roles import Role

NAMES = {"SecretSystemA": '=HYPERLINK("http://x","y")', "SecretSystemB": "@SUM(1+1)"}


def test_the_study_results_csv_neutralises_system_names(make_user, users, client_for) -> None:
    world = build_world(make_user, n_systems=2, n_items=2)
    raters = [users["evaluator"], make_user(Role.EVALUATOR, "second")]
    study = make_study(world, raters, users["admin"], training_count=0, trap_count=0)
    for rater in raters:
        # B scores above A, so the Wilcoxon row (A minus B) carries a negative difference.
        rate_everything(study, rater, lambda a, d: 2 if from_system(a.stimulus, "A") else 5)
    for old, new in NAMES.items():
        System.objects.filter(name=old).update(name=new)

    text = client_for("admin").get(reverse("evaluation:study_results_csv", args=[study.pk])).content.decode()

    rows = list(csv.DictReader(io.StringIO(text)))
    named = {row["system"] for row in rows if row["system"]} | {
        r["other_system"] for r in rows if r["other_system"]
    }
    assert named == {f"'{name}" for name in NAMES.values()}
    # A negative estimate is a number, not a formula: it is written as it is.
    estimates = {row["estimate"] for row in rows if row["figure"] == "wilcoxon"}
    assert estimates == {"-3.0000"}
