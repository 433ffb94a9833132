"""Authoring multiple-choice questions in the studio: admins add, edit and delete them, with clear
messages for a bad key, too few options or a type of the wrong level; nobody else may."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.echomind.models import Answer, DeliverySet, Question
from evaluation.echomind.transfer import import_layout
from tests.evaluation.echomind.fixture import echomind_files
from tests.factories import SystemFactory
from webapp.models import User

pytestmark = pytest.mark.django_db
OTHER_ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "norole")


@pytest.fixture
def case(users: dict[str, User], media_root: Path) -> DeliverySet:
    import_layout(echomind_files(with_audio=False), users["admin"])
    return DeliverySet.objects.get(case_id="id_1")


def _form(**changes: str) -> dict[str, str]:
    return {
        "question_id": "em-pace",
        "level": "understanding",
        "question_type": "pace",
        "text": "How fast does the speaker talk?",
        "options": "Fast\nNormal\nSlow",
        "key_target": "c",
        "key_neutral": "B",
        "key_alternative": "",
        **changes,
    }


def test_a_question_keyed_on_two_deliveries_becomes_one_question_each(
    case: DeliverySet, client_for: Callable[[str], Client]
) -> None:
    response = client_for("admin").post(f"/echomind/sets/{case.pk}/questions/", _form())

    assert response.status_code == 302
    made = {q.question_id: q for q in Question.objects.filter(question_id__startswith="em-pace")}
    assert sorted(made) == ["em-pace_neutral", "em-pace_target"]
    target = made["em-pace_target"]
    assert (target.delivery.role, target.options, target.answer, target.level, target.question_type) == (
        "target",
        ["Fast", "Normal", "Slow"],
        "C",
        "understanding",
        "pace",
    )
    assert made["em-pace_neutral"].answer == "B"
    page = client_for("admin").get(f"/echomind/sets/{case.pk}/questions/").content.decode()
    assert "em-pace_target" in page and "How fast does the speaker talk?" in page


def test_a_single_keyed_delivery_keeps_the_id_as_given(
    case: DeliverySet, client_for: Callable[[str], Client]
) -> None:
    client_for("admin").post(f"/echomind/sets/{case.pk}/questions/", _form(key_neutral=""))
    assert Question.objects.get(question_id="em-pace").delivery.role == "target"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"key_target": "D"}, "The answer key D is not one of the options (A, B, C)."),
        ({"options": "Fast"}, "A question needs 2 to 26 options."),
        ({"options": "Fast\nfast."}, "Two options say the same."),
        (
            {"question_type": "speaker intent"},
            "“speaker intent” is not a type of the understanding level; it is a reasoning type.",
        ),
        ({"level": "conversation"}, "Select a valid choice."),
        ({"question_type": "vibes"}, "Select a valid choice."),
        ({"key_target": "", "key_neutral": ""}, "Give an answer key for at least one delivery."),
        ({"question_id": "u1", "key_neutral": ""}, "Another question has the id u1."),
    ],
)
def test_a_bad_question_is_refused_with_a_clear_message(
    case: DeliverySet, client_for: Callable[[str], Client], changes: dict[str, str], message: str
) -> None:
    before = Question.objects.count()
    response = client_for("admin").post(f"/echomind/sets/{case.pk}/questions/", _form(**changes))

    assert response.status_code == 200
    assert message in response.content.decode().replace("&#x27;", "'")
    assert Question.objects.count() == before


def test_editing_the_options_reads_the_systems_answers_again(
    case: DeliverySet, client_for: Callable[[str], Client]
) -> None:
    from evaluation.echomind.answers import import_answers

    system = SystemFactory.create(name="Parrot")
    import_answers(system, b'{"question_id": "u1", "answer": "sad"}\n')
    assert Answer.objects.get().letter == "B"  # "sad" is option B's text
    question = Question.objects.get(question_id="u1")
    admin = client_for("admin")
    assert "Sad" in admin.get(f"/echomind/questions/{question.pk}/").content.decode()

    response = admin.post(
        f"/echomind/questions/{question.pk}/",
        {
            "question_id": "u1",
            "level": "understanding",
            "question_type": "emotion",
            "text": "What is the speaker's emotion?",
            "options": "Sad\nHappy",
            "key_target": "A",
        },
    )

    assert response.status_code == 302
    question.refresh_from_db()
    assert (question.options, question.answer) == (["Sad", "Happy"], "A")
    assert Answer.objects.get().letter == "A"


def test_a_saved_question_stays_about_one_delivery(
    case: DeliverySet, client_for: Callable[[str], Client]
) -> None:
    question = Question.objects.get(question_id="u1")
    response = client_for("admin").post(
        f"/echomind/questions/{question.pk}/", _form(question_id="u1", key_target="A", key_neutral="B")
    )
    assert "A saved question is about one delivery" in response.content.decode()


def test_removing_a_question_archives_it_and_restoring_brings_its_answers_back(
    case: DeliverySet, client_for: Callable[[str], Client], users: dict[str, User]
) -> None:
    from evaluation.echomind import reports
    from evaluation.echomind.answers import import_answers

    system = SystemFactory.create()
    import_answers(system, b'{"question_id": "u1", "answer": "B"}\n')
    question = Question.objects.get(question_id="u1")
    answered = [r for r in reports.answer_records() if r.question_id == "u1"]
    assert len(answered) == 1
    response = client_for("admin").post(f"/echomind/questions/{question.pk}/delete/", follow=True)

    assert "Archived u1" in response.content.decode()
    question.refresh_from_db()
    assert question.is_archived and question.archived_by == users["admin"]
    assert question.archive_reason == "removed on the questions page"
    # Kept, out of every score, count and export; the questions page no longer lists it.
    assert Answer.objects.filter(question=question).count() == 1
    assert [r for r in reports.answer_records() if r.question_id == "u1"] == []
    assert system.name not in reports.systems()
    page = client_for("admin").get(f"/echomind/sets/{case.pk}/questions/").content.decode()
    assert ">u1<" not in page
    # Removing it again answers 404: it is no longer in use.
    assert client_for("admin").post(f"/echomind/questions/{question.pk}/delete/").status_code == 404

    # The Django admin's restore action brings it back, answers and all.
    admin_user = users["admin"]
    admin_user.is_staff = True
    admin_user.save(update_fields=["is_staff"])
    restored = client_for("admin").post(
        reverse("admin:evaluation_question_changelist"),
        {"action": "restore_selected", "_selected_action": [question.pk]},
    )
    assert restored.status_code == 302
    question.refresh_from_db()
    assert not question.is_archived
    assert [r.question_id for r in reports.answer_records() if r.question_id == "u1"] == ["u1"]


@pytest.mark.parametrize("name", OTHER_ROLES)
def test_other_roles_may_not_author_questions(
    case: DeliverySet, client_for: Callable[[str], Client], name: str
) -> None:
    question = Question.objects.get(question_id="u1")
    client = client_for(name)
    for path in (f"/echomind/sets/{case.pk}/questions/", f"/echomind/questions/{question.pk}/"):
        assert client.get(path).status_code == 403
        assert client.post(path, _form()).status_code == 403
    assert client.post(f"/echomind/questions/{question.pk}/delete/").status_code == 403
    anonymous = Client().post(f"/echomind/questions/{question.pk}/delete/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert (
        Question.objects.count() == 5 and not Question.objects.filter(question_id__startswith="em-").exists()
    )
