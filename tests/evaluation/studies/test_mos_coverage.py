"""A study MOS carries n of N (outputs rated, of the system's rated outputs in the study) on the page,
CSV and API, and a MOS whose outputs are not all rated yet is not ranked."""

from __future__ import annotations

import csv
import io
import json
import re

from django.urls import reverse

from evaluation.studies.results import summarise_ratings, summary_csv
from evaluation.studies.screening import RatingRow
from evaluation.studies.workflows import submit_rating
from tests.evaluation.studies.support import build_world, from_system, make_study, play


def _rows() -> list[RatingRow]:
    # A: 3 outputs rated 4, 4, 4; B: 2 of its 3 outputs rated, 5 and 5 (higher, on fewer outputs).
    scores = {("A", "i1"): 4, ("A", "i2"): 4, ("A", "i3"): 4, ("B", "i1"): 5, ("B", "i2"): 5}
    return [
        RatingRow("r1", f"{system}-{item}", "rated", system, item, "naturalness", score)
        for (system, item), score in scores.items()
    ]


def test_a_partially_rated_system_carries_n_of_n_and_is_not_ranked() -> None:
    summary = summarise_ratings(
        _rows(), ["A", "B"], ["naturalness"], n_boot=50, expected_outputs={"A": 3, "B": 3}
    )
    a, b = summary.cell("A", "naturalness"), summary.cell("B", "naturalness")
    assert (a.coverage.text, a.comparable, a.rank) == ("3/3", True, 1)
    assert (b.mean, b.coverage.text, b.comparable, b.rank) == (5.0, "2/3", False, None)
    rows = [row for row in csv.DictReader(io.StringIO(summary_csv(summary))) if row["figure"] == "mos"]
    assert [(row["system"], row["n_outputs"], row["n_expected"]) for row in rows] == [
        ("A", "3", "3"),
        ("B", "2", "3"),
    ]


def test_without_expectations_each_system_expects_the_outputs_it_was_rated_on() -> None:
    summary = summarise_ratings(_rows(), ["A", "B"], ["naturalness"], n_boot=50)
    assert [summary.cell(system, "naturalness").rank for system in "AB"] == [2, 1]


def test_the_page_csv_and_api_carry_n_of_n(make_user, users, client_for) -> None:
    world = build_world(make_user, n_systems=2, n_items=2)
    study = make_study(world, [users["evaluator"]], users["admin"], training_count=0, trap_count=0)
    # the evaluator rates both of A's outputs and none of B's yet
    for assignment in study.assignments.select_related("stimulus__system").order_by("position"):
        if from_system(assignment.stimulus, "A"):
            play(assignment)
            submit_rating(assignment.pk, {key: 4 for key in study.dimensions})
    admin = client_for("admin")
    dimension = study.dimensions[0]

    html = admin.get(reverse("evaluation:study_results", args=[study.pk])).content.decode()
    row_a = re.search(r'<tr data-system="SecretSystemA">(.*?)</tr>', html, re.S)
    row_b = re.search(r'<tr data-system="SecretSystemB">(.*?)</tr>', html, re.S)
    assert row_a is not None and row_b is not None
    assert '<span class="count" data-testid="coverage">n = 2/2 outputs · 2 ratings</span>' in row_a.group(1)
    assert (
        '<span class="count" data-testid="coverage" data-comparable="false">n = 0/2 outputs · 0 ratings'
        " · † not comparable</span>"
    ) in row_b.group(1)

    found = re.search(r'id="mos-chart-data" type="application/json">(.*?)</script>', html)
    assert found is not None
    chart = json.loads(found.group(1))
    n_dimensions = len(study.dimensions)
    assert [(bars["coverage"], bars["comparable"]) for bars in chart["datasets"]] == [
        (["2/2"] * n_dimensions, [True] * n_dimensions),
        (["0/2"] * n_dimensions, [False] * n_dimensions),
    ]

    text = admin.get(reverse("evaluation:study_results_csv", args=[study.pk])).content.decode()
    mos = {row["system"]: row for row in csv.DictReader(io.StringIO(text)) if row["figure"] == "mos"}
    assert (mos["SecretSystemA"]["n_outputs"], mos["SecretSystemA"]["n_expected"]) == ("2", "2")

    api = admin.get(f"/api/studies/{study.pk}/results/").json()
    cells = {(cell["system"], cell["dimension"]): cell for cell in api["mos"]}
    a, b = cells[("SecretSystemA", dimension)], cells[("SecretSystemB", dimension)]
    assert (a["n_outputs"], a["n_expected"], a["comparable"], a["rank"]) == (2, 2, True, 1)
    assert (b["n_outputs"], b["n_expected"], b["comparable"], b["rank"]) == (0, 2, False, None)
