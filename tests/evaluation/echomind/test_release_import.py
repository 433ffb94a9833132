"""Issue 39: an EchoMind release imports as it is published: its own attribute names, an unknown
name, a duplicate question id and a speaker case recorded neutrally too; every file accounted for,
no earlier import's answers re-bound, and EchoEval's test split unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.recording.forms import AssignmentForm
from annotation.recording.models import Item, Split, Take
from evaluation.echomind import reports
from evaluation.echomind.answers import import_answers
from evaluation.echomind.models import Answer, Delivery, DeliveryImport, Question
from evaluation.echomind.transfer import import_layout
from evaluation.results.reports import SINGLE, in_item_set
from ml.jobs.datasets import ready_counts
from ml.jobs.forms import InferenceJobForm
from ml.jobs.models import DatasetSnapshot
from tests.evaluation.echomind.fixture import echomind_files
from tests.factories import RecordedItemFactory, SystemFactory, UserFactory, tiny_wav
from webapp.models import User

pytestmark = pytest.mark.django_db

ROLES = ("target", "neutral", "alternative")


def _name(case: int, attribute: str, topic: str, role: str) -> str:
    return f"id_{case}_{attribute}_{topic}_{role}.wav"


def _case(case: int, attribute: str, alternative: str, topic: str, roles: tuple[str, ...]) -> dict[str, Any]:
    return {
        "id": f"id_{case}",
        "topic": topic,
        "text": f"Script {case} is read here.",
        "attribute": attribute,
        "alternative_attribute": alternative,
        "audio": {role: _name(case, attribute, topic, role) for role in roles},
    }


def _question(qid: str, audio: str, answer: str = "A") -> dict[str, Any]:
    return {
        "question_id": qid,
        "audio": audio,
        "question": "What is heard?",
        "options": ["X", "Y"],
        "answer": answer,
        "type": "emotion",
    }


def release() -> dict[str, bytes]:
    """An upload as EchoMind publishes it: the release's names ("angry", "sound of wind blowing",
    "elderly" with a neutral recording), one name nothing matches, a question id given twice, a
    broken recording, a system's reply, a recording no case names and a README."""
    para = [_case(1023, "angry", "happy", "school", ROLES), _case(77, "purring", "", "home", ("target",))]
    speaker = [_case(355, "elderly", "adult", "family", ROLES)]
    environment = [
        _case(
            2471,
            "sound of wind blowing",
            "sound of thunderstorm and thunder",
            "no_specific_topics",
            ("target", "neutral"),
        )
    ]
    wind_target = _name(2471, "sound of wind blowing", "no_specific_topics", "target")
    files = {
        "script_info_paralinguistic.json": json.dumps(para).encode(),
        "script_info_speaker.json": json.dumps(speaker).encode(),
        "script_info_environment.json": json.dumps(environment).encode(),
        "MCQ/understanding.json": json.dumps(
            [
                _question("u1", _name(1023, "angry", "school", "target")),
                _question("u2", _name(355, "elderly", "family", "neutral")),
                _question("u1", wind_target),  # the same id twice
            ]
        ).encode(),
        "MCQ/reasoning.json": json.dumps([_question("r1", wind_target, "B")]).encode(),
        "README.md": b"EchoMind\n",
        "audio/id_1023_angry_school_target_response.wav": tiny_wav(0.5),
        "audio/id_999_happy_park_target.wav": tiny_wav(0.5),
    }
    for number, case in enumerate([*para, *speaker, *environment]):
        for offset, name in enumerate(case["audio"].values()):
            files[f"audio/{name}"] = tiny_wav(0.6, 180.0 + 20 * number + 5 * offset)
    files["audio/" + _name(2471, "sound of wind blowing", "no_specific_topics", "neutral")] = (
        b"RIFF not audio"
    )
    return files


def test_a_release_imports_as_published_and_every_file_is_accounted_for(media_root: Path) -> None:
    files = release()
    report = import_layout(files, UserFactory.create(), "echomind-release.zip")

    # Every file once, each imported, unchanged or refused with its reason.
    assert sorted(outcome.name for outcome in report.files) == sorted(files)
    status = {outcome.name: outcome.status for outcome in report.files}
    detail = {outcome.name: outcome.detail for outcome in report.files}
    refused = sorted(name for name, state in status.items() if state == "refused")
    assert refused == sorted(
        [
            "README.md",
            "audio/id_1023_angry_school_target_response.wav",
            "audio/id_2471_sound of wind blowing_no_specific_topics_neutral.wav",
            "audio/id_77_purring_home_target.wav",
            "audio/id_999_happy_park_target.wav",
        ]
    )
    assert "the attribute 'purring' matches no attribute" in detail["audio/id_77_purring_home_target.wav"]
    assert "nearest: " in detail["audio/id_77_purring_home_target.wav"]
    assert (
        "not readable audio" in detail["audio/id_2471_sound of wind blowing_no_specific_topics_neutral.wav"]
    )
    assert "no case of the upload names" in detail["audio/id_999_happy_park_target.wav"]
    assert "u1 appears twice" in detail["MCQ/understanding.json"]
    assert (
        status["script_info_paralinguistic.json"] == "imported"
        and "id_77" in detail["script_info_paralinguistic.json"]
    )
    assert any("purring" in problem and "nearest" in problem for problem in report.problems)

    # Recordings: every imported audio file is a take (the elderly neutral one too).
    wavs_imported = [name for name in files if name.endswith(".wav") and status[name] == "imported"]
    assert report.audio == len(wavs_imported) == Take.objects.count() == 7
    elderly = Delivery.objects.get(delivery_set__case_id="id_355", role="neutral")
    assert elderly.item.recording is not None
    assert (
        Delivery.objects.get(delivery_set__case_id="id_1023", role="target").delivery_set.attribute.code
        == "angry_tone"
    )
    wind = Delivery.objects.get(delivery_set__case_id="id_2471", role="alternative")
    assert (wind.delivery_set.attribute.code, str(wind.attribute)) == ("wind", "Thunderstorm")
    assert (report.cases, report.questions) == (3, 3)
    assert Question.objects.get(question_id="u1").delivery.delivery_set.case_id == "id_1023"

    # The report is stored with the import, shown on its page and returned by the API.
    record = DeliveryImport.objects.get()
    assert record.report["files_refused"] == 5 and len(record.report["files"]) == len(files)


def test_the_report_is_on_the_page_and_from_the_api(
    media_root: Path, client_for: Callable[[str], Client], users: dict[str, User]
) -> None:
    admin = client_for("admin")
    upload = [
        (name.replace("/", "_") if name.startswith("audio/") else name, data)
        for name, data in release().items()
    ]
    response = admin.post(
        "/api/echomind/imports/", {"files": [SimpleUploadedFile(n.rsplit("/", 1)[-1], d) for n, d in upload]}
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert len(body["files"]) == len(upload) and body["files_refused"] >= 1
    assert admin.get(f"/api/echomind/imports/{body['import']}/").json() == body
    page = admin.get(f"/echomind/imports/{body['import']}/").content.decode()
    assert "README.md" in page and "purring" in page and "refused" in page
    assert client_for("evaluator").get(f"/api/echomind/imports/{body['import']}/").status_code == 403


def test_a_second_import_never_re_binds_an_earlier_import_s_answers(media_root: Path) -> None:
    admin = UserFactory.create()
    first = import_layout(echomind_files(with_audio=False), admin)
    system = SystemFactory.create(name="Listener")
    answered = import_answers(
        system, b'{"question_id": "u1", "answer": "B"}\n{"question_id": "u3", "answer": "A"}\n'
    )
    assert not answered.problems
    before = {
        (a.question.question_id, a.question.delivery_id, a.letter)
        for a in Answer.objects.select_related("question")
    }
    u1_first = Question.objects.get(question_id="u1")

    # A second release uses the same ids for questions about other recordings.
    second = import_layout(release(), admin)
    assert second.questions == 3
    assert {
        (a.question.question_id, a.question.delivery_id, a.letter)
        for a in Answer.objects.select_related("question")
    } == before
    assert Question.objects.get(pk=u1_first.pk).delivery_id == u1_first.delivery_id
    (row,) = reports.board()
    assert (row.understanding.correct, row.understanding.asked) == (
        2,
        2,
    )  # nothing answered that was not asked

    # An id both imports use must be named with its import; then each binds to its own question.
    ambiguous = import_answers(system, b'{"question_id": "u1", "answer": "A"}\n')
    assert ambiguous.problems and "several imports" in ambiguous.problems[0]
    scoped = import_answers(
        system, json.dumps({"question_id": "u1", "import": second.import_id, "answer": "A"}).encode()
    )
    assert not scoped.problems
    assert (
        Answer.objects.filter(question__source_id=second.import_id, question__question_id="u1").count() == 1
    )
    assert Answer.objects.get(question=u1_first).letter == "B"
    assert (
        import_answers(system, b'{"question_id": "u3", "answer": "A"}\n', scope=first.import_id).problems
        == []
    )

    # The same release once more changes nothing: its questions are already here.
    again = import_layout(echomind_files(with_audio=False), admin)
    assert (again.questions, again.questions_unchanged) == (0, 5)


def test_deliveries_are_their_own_set_and_echoeval_s_test_split_is_unchanged(media_root: Path) -> None:
    for _ in range(3):
        RecordedItemFactory.create(split=Split.TEST)
    test_items = set(Item.objects.filter(split=Split.TEST).values_list("pk", flat=True))
    inference_ready = ready_counts(DatasetSnapshot.Purpose.INFERENCE)
    assert inference_ready["test"] == 3

    import_layout(echomind_files(), UserFactory.create())
    deliveries = Item.objects.filter(echomind_delivery__isnull=False)
    assert deliveries.count() == 7 and deliveries.filter(recording__isnull=False).count() == 7
    assert set(deliveries.values_list("split", flat=True)) == {Split.ECHOMIND}
    assert ready_counts(DatasetSnapshot.Purpose.INFERENCE) == inference_ready
    assert set(Item.objects.filter(split=Split.TEST).values_list("pk", flat=True)) == test_items
    # Leaderboards' single-turn set is EchoEval's; the deliveries still go through recording.
    assert not Item.objects.filter(in_item_set(SINGLE, "")).filter(echomind_delivery__isnull=False).exists()
    splits: Any = InferenceJobForm().fields["splits"]
    assert [value for value, _ in splits.choices] == ["test", "dev", "train"]
    split: Any = AssignmentForm().fields["split"]
    assert Split.ECHOMIND in [value for value, _ in split.choices]
