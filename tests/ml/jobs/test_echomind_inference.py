"""EchoChat on EchoMind: a checkpoint (the tiny model, built in memory) hears the delivery sets'
accepted takes, answers each question and replies to each delivery; what it said is stored exactly
as an imported answers file is, under an EchoChat system, and reaches the EchoMind leaderboard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.echomind import reports
from evaluation.echomind.answers import import_answers
from evaluation.echomind.choices import choice_prompt, read_choice
from evaluation.echomind.models import Answer, Delivery, Question, Reply
from evaluation.echomind.taxonomy import conversation_prompt
from evaluation.echomind.transfer import export_layout, import_layout
from evaluation.outputs.models import System
from ml.core.training_records import read_wav
from ml.jobs.echomind.inference import echomind_tasks
from ml.jobs.launch import ECHOMIND_INFERENCE_JOB, start_ml_job
from ml.jobs.models import DatasetSnapshot
from tests.evaluation.echomind.fixture import echomind_files
from tests.factories import SystemFactory
from tests.ml.jobs.support import finished
from webapp.jobs import JobStatus
from webapp.models import Job, User
from webapp.storage import read_media

pytestmark = pytest.mark.usefixtures("ml_storage")
PAGE = reverse("ml:start_job", args=[ECHOMIND_INFERENCE_JOB])


@pytest.fixture
def recorded_sets(users: dict[str, User], media_root: Path) -> None:
    """Three cases, seven deliveries with accepted takes, five questions (the shared fixture)."""
    report = import_layout(echomind_files(), users["admin"])
    assert report.imported, report.problems


def _parameters(**changes: object) -> dict[str, object]:
    return {
        "start_from": "tiny",
        "system_name": "EchoChat on EchoMind",
        "prompts": ["none", "enhanced"],
        "max_new_tokens": 8,
        "batch_size": 4,
        "device": "cpu",
        "dtype": "float32",
        **changes,
    }


def test_each_question_is_asked_with_its_options_and_each_delivery_replied_to_per_prompt(
    recorded_sets: None,
) -> None:
    tasks, takes = echomind_tasks(["none", "enhanced"])

    assert len(takes) == 7 and len(tasks) == 5 + 7 * 2
    asked = {task.row["question_id"]: task.item for task in tasks if "question_id" in task.row}
    u1 = Question.objects.get(question_id="u1")
    assert asked["u1"].prompt == choice_prompt(u1.text, u1.options)
    assert "B. Sad" in asked["u1"].prompt and "The answer is: [X]" in asked["u1"].prompt
    # the model hears the delivery's accepted take itself
    take = u1.delivery.item.recording
    assert take is not None
    audio, rate = read_wav(read_media(take.audio_key))
    assert asked["u1"].sample_rate == rate and (asked["u1"].audio == audio).all()
    speaker = Delivery.objects.get(delivery_set__case_id="id_3", role="target")
    enhanced = next(
        task for task in tasks if task.row == {"delivery": speaker.audio_name(), "prompt": "enhanced"}
    )
    assert enhanced.item.prompt == conversation_prompt("enhanced", "speaker")
    assert "who is speaking" in enhanced.item.prompt


@pytest.mark.slow
def test_a_checkpoint_answers_the_sets_and_its_answers_are_stored_as_imported_ones(
    recorded_sets: None, users: dict[str, User]
) -> None:
    # when the job runs the tiny model over the sets, as a worker would
    job = finished(start_ml_job(ECHOMIND_INFERENCE_JOB, started_by=users["admin"], parameters=_parameters()))

    # then it succeeded, reporting progress, and froze no dataset snapshot
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.progress == 1.0 and job.metrics and job.metrics[-1]["step"] == 19
    assert not DatasetSnapshot.objects.filter(job=job).exists()
    system = System.objects.get(name="EchoChat on EchoMind")
    assert (system.category, system.text_only, system.version) == (
        System.Category.OURS,
        False,
        "tiny-demo-qwen2-audio",
    )
    assert job.result is not None
    assert (job.result["answers"], job.result["replies"], len(job.result["takes"])) == (5, 14, 7)

    # and every answer is read by the documented patterns from what the model said
    answers = Answer.objects.filter(system=system).select_related("question")
    assert answers.count() == 5
    for answer in answers:
        reading = read_choice(answer.raw_text, answer.question.options)
        assert (answer.letter, answer.pattern) == (reading.letter or "", reading.pattern)
    assert job.result["unparsed"] == sum(not answer.letter for answer in answers)

    # and each delivery has a voiced reply per prompt strength
    replies = Reply.objects.filter(system=system)
    assert sorted(replies.values_list("prompt", flat=True)) == ["enhanced"] * 7 + ["none"] * 7
    assert all(read_media(reply.audio_key)[:4] == b"RIFF" for reply in replies)

    # and the EchoMind leaderboard counts them like any system's
    row = next(row for row in reports.board() if row.system == system.name)
    assert (row.understanding.asked, row.reasoning.asked) == (3, 2)

    # and the answers file it wrote reads back identically when imported for another system
    exported = export_layout()["answers/EchoChat-on-EchoMind.jsonl"]
    twin = SystemFactory.create(name="Twin")
    import_answers(twin, exported)
    letters = {a.question.question_id: a.letter for a in answers}
    assert {a.question.question_id: a.letter for a in Answer.objects.filter(system=twin)} == letters


def test_an_admin_starts_it_from_the_form_and_is_sent_to_its_progress(
    recorded_sets: None, client_for: Callable[[str], Client]
) -> None:
    admin = client_for("admin")
    page = admin.get(PAGE).content.decode()
    assert "7 deliveries with an accepted take, 5 questions on them" in page
    assert reverse("ml:start_job", args=[ECHOMIND_INFERENCE_JOB]) in admin.get("/echomind/").content.decode()

    response = admin.post(
        PAGE, {"start_from": "tiny", "system_name": "", "prompts": ["none", "basic"], "max_new_tokens": 16,
               "batch_size": 2, "device": "cpu"},
    )  # fmt: skip

    job = Job.objects.get(kind=ECHOMIND_INFERENCE_JOB)
    assert response.status_code == 302 and response["Location"] == reverse("ml:job", args=[job.pk])
    assert job.parameters == {
        "start_from": "tiny", "system_name": "EchoChat Tiny demo model", "prompts": ["none", "basic"],
        "max_new_tokens": 16, "batch_size": 2, "device": "cpu", "dtype": "auto",
    }  # fmt: skip
    assert "EchoChat answers the EchoMind delivery sets" in admin.get(response["Location"]).content.decode()


def test_nothing_recorded_or_another_system_s_name_is_refused(
    db: None, users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    SystemFactory.create(name="GPT-4o-Audio", category=System.Category.OMNI)
    form = {"start_from": "tiny", "system_name": "GPT-4o-Audio", "prompts": ["none"], "max_new_tokens": 8,
            "batch_size": 1, "device": "cpu"}  # fmt: skip
    page = client_for("admin").post(PAGE, form).content.decode()
    assert "No EchoMind delivery has an accepted take yet" in page
    assert "A system that is not EchoChat has this name" in page
    assert not Job.objects.exists()


@pytest.mark.parametrize("name", ["actor", "reviewer", "annotator", "lead", "evaluator", "norole"])
def test_other_roles_cannot_start_it(
    recorded_sets: None, client_for: Callable[[str], Client], name: str
) -> None:
    assert client_for(name).post(PAGE, {"start_from": "tiny", "prompts": ["none"]}).status_code == 403
    assert not Job.objects.exists()
