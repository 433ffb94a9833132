"""Comparison studies' pages: who may use each (anonymous, every role, a stranger, another rater),
blindness of everything a rater receives, the results page of each kind, exports and creation."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.studies.models import Study, StudyAssignment, StudySlot
from tests.evaluation.studies.comparisons.support import answer_everything, make_comparison
from tests.evaluation.studies.support import build_world
from tests.support.listening import play_links
from webapp.api.tokens import create_token
from webapp.models import User
from webapp.roles import Role
from webapp.storage import key_for_viewer

ROLES = ["actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole"]
AUDIO_SRC = re.compile(r'<audio[^>]*src="([^"]+)"')


@pytest.fixture
def world(make_user):
    return build_world(make_user, n_systems=3, n_items=3)


@pytest.fixture
def mushra(world, users, make_user):
    return make_comparison(
        world,
        [users["evaluator"], make_user(Role.EVALUATOR, "other")],
        users["admin"],
        "mushra",
        items_per_system=2,
    )


def _urls(study: Study, rater: User) -> dict[str, list[str]]:
    assignment = StudyAssignment.objects.filter(study=study, evaluator=rater).order_by("position")[0]
    slot = assignment.slots.order_by("position")[1]
    return {
        "rater_post": [
            reverse("evaluation:slot_played", args=[slot.public_id]),
            reverse("evaluation:submit_trial", args=[assignment.public_id]),
        ],
        "admin_get": [
            reverse("evaluation:study_results", args=[study.pk]),
            reverse("evaluation:study_results_csv", args=[study.pk]),
            reverse("evaluation:study_results_json", args=[study.pk]),
        ],
    }


def test_anonymous_users_are_sent_to_login(client, mushra, users):
    urls = _urls(mushra, users["evaluator"])
    for url in urls["rater_post"]:
        assert client.post(url)["Location"].startswith(reverse("login")), url
    for url in urls["admin_get"]:
        assert client.get(url)["Location"].startswith(reverse("login")), url


@pytest.mark.parametrize("role", ROLES)
def test_trial_actions_are_for_evaluators_and_results_for_admins(client_for, mushra, users, role):
    client = client_for(role)
    played, answer = _urls(mushra, users["evaluator"])["rater_post"]
    allowed = role == "evaluator"
    assert client.post(played).status_code == (409 if allowed else 403)  # 409: not heard yet
    assert client.post(answer).status_code == (302 if allowed else 403)
    assert client.get(played).status_code == (405 if allowed else 403)
    for url in _urls(mushra, users["evaluator"])["admin_get"]:
        assert client.get(url).status_code == (200 if role == "admin" else 403), url


def test_another_raters_trial_and_slots_do_not_exist_for_an_evaluator(mushra, users, make_user):
    theirs = _urls(mushra, User.objects.get(username="other"))["rater_post"]
    client = Client()
    client.force_login(users["evaluator"])
    for url in theirs:
        assert client.post(url).status_code == 404
    stranger = Client()
    stranger.force_login(make_user(Role.EVALUATOR, "stranger"))
    assert stranger.get(reverse("evaluation:rate_study", args=[mushra.public_id])).status_code == 404
    for url in _urls(mushra, users["evaluator"])["rater_post"]:
        assert stranger.post(url).status_code == 404


def test_the_json_export_is_for_comparison_studies(client_for, world, users):
    from tests.evaluation.studies.support import make_study

    acr = make_study(world, [users["evaluator"]], users["admin"], training_count=0, trap_count=0)
    assert client_for("admin").get(reverse("evaluation:study_results_json", args=[acr.pk])).status_code == 404


@pytest.mark.parametrize("kind", ["mushra", "ab", "ccr"])
def test_nothing_a_rater_receives_names_a_system_or_a_condition(world, users, make_user, client_for, kind):
    rater = users["evaluator"]
    extra = {"reference_system": world.systems[0]} if kind == "ccr" else {}
    study = make_comparison(
        world, [rater, make_user(Role.EVALUATOR)], users["admin"], kind, items_per_system=2, **extra
    )
    client = client_for("evaluator")
    received = [client.get(reverse("evaluation:evaluator_queue")).content.decode()]
    while (assignment := StudyAssignment.objects.next_for(study, rater)) is not None:
        page = client.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
        received.append(page)
        urls = AUDIO_SRC.findall(page)
        keys = [key_for_viewer(url.rstrip("/").rsplit("/", 1)[-1], rater) for url in urls]
        assert len(set(keys)) == len(keys) == assignment.slots.count()  # every sample its own link
        assert all(key and key.startswith("audio/stimulus/") for key in keys)
        StudyAssignment.objects.filter(pk=assignment.pk).update(
            presented_at=timezone.now() - timedelta(minutes=5)
        )
        play_links(client, rater, urls)
        for slot in assignment.slots.order_by("position"):
            played = client.post(reverse("evaluation:slot_played", args=[slot.public_id]))
            assert played.status_code == 200, played.content
            received.append(played.content.decode())
        positions = list(assignment.slots.filter(position__gt=0).values_list("position", flat=True))
        answer = {f"score_{p}": "70" for p in positions} if kind == "mushra" else {"score_2": "1"}
        submitted = client.post(reverse("evaluation:submit_trial", args=[assignment.public_id]), answer)
        received.append(submitted["Location"])
        assert StudyAssignment.objects.get(pk=assignment.pk).submitted_at is not None
    everything = "\n".join(received).lower()
    forbidden = [system.name for system in world.systems] + [
        system.anonymous_code for system in world.systems
    ]
    forbidden += [str(output.public_id) for output in world.outputs] + [study.name]
    # Words of a condition, each long or spaced: a bare "khz" turns up in signed audio tokens by chance.
    forbidden += [
        "hidden reference",
        "hidden_reference",
        "low_anchor",
        "mid_anchor",
        "anchor 3",
        "anchor 7",
        "3.5 khz",
        "7 khz",
        "low-pass",
    ]
    assert [text for text in forbidden if text.lower() in everything] == []
    assert "data-system" not in everything and "data-role" not in everything


@pytest.mark.parametrize("kind", ["mushra", "ab", "ccr"])
def test_the_results_page_shows_tables_chart_exclusions_and_time(world, users, make_user, client_for, kind):
    raters = [users["evaluator"], make_user(Role.EVALUATOR, "second")]
    extra = {"reference_system": world.systems[0]} if kind == "ccr" else {}
    study = make_comparison(world, raters, users["admin"], kind, items_per_system=2, **extra)

    def answer(assignment, slots):
        if kind == "mushra":
            return {
                slot.position: 95 if slot.part.role == "hidden_reference" else 40
                for slot in slots
                if slot.position
            }
        return {2: 1}

    for rater in raters:
        answer_everything(study, rater, answer)
    seat = study.raters.get(evaluator=raters[1])
    seat.decision, seat.decision_note = "exclude", "rushed"
    seat.save()
    admin = client_for("admin")
    page = admin.get(reverse("evaluation:study_results", args=[study.pk])).content.decode()
    table = {"mushra": "mushra-table", "ab": "bt-table", "ccr": "cmos-table"}[kind]
    assert f'data-testid="{table}"' in page and 'data-testid="comparison-chart"' in page
    assert "second</strong>: excluded by an admin: rushed" in page
    assert 'data-testid="time-on-task"' in page and 'data-rater="evaluator"' in page
    found = re.search(r'id="comparison-chart-data"[^>]*>(.*?)</script>', page, re.S)
    assert found is not None
    chart = json.loads(found.group(1))
    assert chart["labels"]
    csv_text = admin.get(reverse("evaluation:study_results_csv", args=[study.pk])).content.decode()
    assert "excluded_rater" in csv_text and "time_on_task" in csv_text
    exported = admin.get(reverse("evaluation:study_results_json", args=[study.pk])).json()
    assert exported["kind"] == kind and exported["excluded"][0]["rater"] == "second"
    api = admin.get(f"/api/studies/{study.pk}/results/").json()
    assert api == exported


def test_a_mushra_study_is_created_through_the_api_and_the_form(world, users, make_user):
    panel = [users["evaluator"], make_user(Role.EVALUATOR)]
    api = Client(HTTP_AUTHORIZATION=f"Token {create_token(users['admin'], 'tests').secret}")
    design = {
        "name": "API MUSHRA",
        "systems": [system.pk for system in world.systems],
        "evaluators": [user.pk for user in panel],
        "kind": "mushra",
        "reference_system": world.systems[0].pk,
        "anchors": ["low", "mid"],
        "dimensions": ["naturalness"],
        "items_per_system": 2,
        "ratings_per_output": 2,
        "training_count": 0,
    }
    created = api.post("/api/studies/", design, content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["kind"] == "mushra"
    study = Study.objects.get(name="API MUSHRA")
    assert study.anchors == ["low", "mid"] and study.reference_system == world.systems[0]
    refused = api.post(
        "/api/studies/",
        {**design, "name": "No ref", "reference_system": None},
        content_type="application/json",
    )
    assert refused.status_code == 400
    del design["reference_system"]
    refused = api.post("/api/studies/", {**design, "name": "No ref"}, content_type="application/json")
    assert refused.status_code == 400 and "reference" in refused.content.decode()

    admin = Client()
    admin.force_login(users["admin"])
    form = admin.get(reverse("evaluation:study_create")).content.decode()
    assert (
        'name="kind" value="mushra"' in form and 'name="reference_system"' in form and 'value="mid"' in form
    )
    posted = admin.post(
        reverse("evaluation:study_create"),
        {
            "name": "Form A/B",
            "title_for_raters": "Listening study",
            "instructions": "Listen to both.",
            "systems": [system.pk for system in world.systems],
            "benchmark_version": study.benchmark_version,
            "kind": "ab",
            "anchors": ["low"],
            "items_per_system": 2,
            "ratings_per_output": 2,
            "dimensions": ["naturalness"],
            "evaluators": [user.pk for user in panel],
            "training_count": 1,
            "trap_count": 1,
            "trap_score": 2,
            "allowed_check_failures": 0,
        },
    )
    assert posted.status_code == 302, posted.content.decode()[-2000:]
    ab = Study.objects.get(name="Form A/B")
    assert ab.kind == "ab" and ab.anchors == []
    assert StudySlot.objects.filter(assignment__study=ab, assignment__stimulus__kind="training").exists()
