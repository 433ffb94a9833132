"""The inference form lets an admin answer dialogues turn by turn and choose the history; nobody else."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from ml.jobs.launch import INFERENCE_JOB
from ml.jobs.models import DatasetSnapshot
from tests.ml.jobs.dialogues.support import recorded_dialogue
from webapp.models import Job, User

pytestmark = pytest.mark.usefixtures("ml_storage")
WRONG_ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "norole")
PAGE = reverse("ml:start_job", args=[INFERENCE_JOB])


def _form(history: str) -> dict[str, object]:
    return {
        "start_from": "tiny",
        "splits": ["test"],
        "benchmark_version": "echoeval-v1",
        "system_name": "EchoChat dialogues",
        "max_new_tokens": 16,
        "batch_size": 1,
        "dialogue_history": history,
        "device": "cpu",
    }


@pytest.fixture
def dialogue(db: None) -> None:
    recorded_dialogue("DL-1", turns=2, split="test")


def test_the_form_offers_single_items_and_both_dialogue_histories(
    dialogue: None, client_for: Callable[[str], Client]
) -> None:
    html = client_for("admin").get(PAGE).content.decode()

    assert 'name="dialogue_history"' in html
    assert "hearing the gold replies after earlier turns" in html
    assert "hearing the model&#x27;s own earlier replies" in html


@pytest.mark.parametrize("history", ["gold", "own"])
def test_an_admin_starts_a_dialogue_run_that_records_its_history_mode(
    dialogue: None, client_for: Callable[[str], Client], history: str
) -> None:
    response = client_for("admin").post(PAGE, _form(history))

    job = Job.objects.get(kind=INFERENCE_JOB)
    assert response.status_code == 302 and response["Location"] == reverse("ml:job", args=[job.pk])
    assert job.parameters["dialogue_history"] == history
    snapshot = DatasetSnapshot.objects.get(job=job)
    second = next(entry for entry in snapshot.entries if entry["external_id"] == "DL-1.t2")
    assert (second["dialogue"], second["turn"], len(second["history"])) == ("DL-1", 2, 1)


def test_a_single_item_run_is_the_default_and_an_unknown_history_is_refused(
    dialogue: None, client_for: Callable[[str], Client]
) -> None:
    client = client_for("admin")
    refused = client.post(PAGE, _form("oracle"))
    assert refused.status_code == 200 and "not one of the available choices" in refused.content.decode()
    assert not Job.objects.exists()

    client.post(PAGE, _form(""))
    assert Job.objects.get().parameters["dialogue_history"] == ""


@pytest.mark.parametrize("name", WRONG_ROLES)
def test_other_roles_cannot_start_a_dialogue_run(
    dialogue: None, client_for: Callable[[str], Client], users: dict[str, User], name: str
) -> None:
    client = client_for(name)
    assert client.get(PAGE).status_code == 403
    assert client.post(PAGE, _form("own")).status_code == 403
    anonymous = Client().post(PAGE, _form("own"))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    assert not Job.objects.exists()
