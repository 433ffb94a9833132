"""The strategy taxonomy: seeded with the nine usual strategies, managed by admins in the Django admin."""

from __future__ import annotations

from django.urls import reverse

from annotation.labelling.models import AnnotationProject, Strategy
from webapp.lib.vocabulary import DEFAULT_STRATEGIES


def test_the_migration_seeds_the_nine_strategies_in_order(db: None) -> None:
    seeded = list(Strategy.objects.values_list("slug", "name"))
    assert seeded == list(DEFAULT_STRATEGIES)
    assert all(Strategy.objects.values_list("active", flat=True))


def test_the_default_project_asks_for_three_annotators(db: None) -> None:
    project = AnnotationProject.objects.get(name="EchoEval")
    assert project.annotators_per_item == 3
    assert (project.splits, project.scenarios) == ([], [])


def test_an_admin_adds_and_retires_strategies(client_for) -> None:
    client = client_for("admin")
    assert client.get(reverse("admin:annotation_strategy_changelist")).status_code == 200
    response = client.post(
        reverse("admin:annotation_strategy_add"),
        {
            "name": "Humour",
            "slug": "humour",
            "description": "Lighten the mood",
            "position": 95,
            "active": "on",
        },
    )
    assert response.status_code == 302
    humour = Strategy.objects.get(slug="humour")
    response = client.post(
        reverse("admin:annotation_strategy_change", args=[humour.pk]),
        {"name": "Gentle humour", "description": "", "position": 95},
    )
    assert response.status_code == 302
    humour.refresh_from_db()
    assert (humour.name, humour.slug, humour.active) == ("Gentle humour", "humour", False)


def test_an_admin_sets_a_project_with_its_own_number_of_annotators(client_for) -> None:
    client = client_for("admin")
    response = client.post(
        reverse("admin:annotation_annotationproject_add"),
        {
            "name": "Pilot",
            "annotators_per_item": 2,
            "splits": ["dev"],
            "scenarios": [],
            "priority": 10,
            "active": "on",
        },
    )
    assert response.status_code == 302
    pilot = AnnotationProject.objects.get(name="Pilot")
    assert (pilot.annotators_per_item, pilot.splits, pilot.scenarios) == (2, ["dev"], [])


def test_only_staff_reach_the_taxonomy(client_for) -> None:
    for role in ("annotator", "lead"):
        assert client_for(role).get(reverse("admin:annotation_strategy_changelist")).status_code == 302
