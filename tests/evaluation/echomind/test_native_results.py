"""EchoMind's own result files (JSON lists: cases with output_content, questions with
predicted_*_answer) imported as answers and replies; an entry that places nowhere is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.echomind.answers import import_answers
from evaluation.echomind.layout import answers_from_results
from evaluation.echomind.models import Answer, Reply
from evaluation.echomind.transfer import import_layout
from tests.evaluation.echomind.fixture import audio_name, echomind_files
from tests.factories import SystemFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_echomind_result_lists_import_as_replies_and_answers(media_root: Path) -> None:
    assert import_layout(echomind_files(with_audio=False), UserFactory.create()).imported
    system = SystemFactory.create(name="Listener")
    case = json.loads(echomind_files()["script_info_paralinguistic.json"])[0]
    case["output_content"] = {"target": "Oh no, rain again?", "neutral": "Rain, then.", "alternative": "Yay!"}
    questions = [
        {"question_id": "u1", "question": "What is the speaker's emotion?", "predicted_answer": "B"},
        {
            "question_id": "r1",
            "question": "What does the speaker most likely need?",
            "predicted_reasoning_answer": "[A]",
        },
    ]
    report = import_answers(system, json.dumps([case, *questions]).encode())
    assert report.problems == [] and (report.replies, report.answers) == (3, 2)
    replies = dict(Reply.objects.filter(system=system).values_list("delivery__role", "text"))
    assert replies == {"target": "Oh no, rain again?", "neutral": "Rain, then.", "alternative": "Yay!"}
    assert dict(Answer.objects.filter(system=system).values_list("question__question_id", "letter")) == {
        "u1": "B",
        "r1": "A",
    }


def test_an_entry_that_places_nowhere_refuses_the_file_with_its_position(media_root: Path) -> None:
    assert import_layout(echomind_files(with_audio=False), UserFactory.create()).imported
    system = SystemFactory.create()
    entries = [
        {"audio": {"target": "id_99_x_y_target.wav"}, "output_content": {"target": "Hello."}},
        {
            "audio": {"target": audio_name(1, "sad_tone", "weather", "target")},
            "output_content": {"loud": "Hm."},
        },
        {"question_id": "u1"},
    ]
    report = import_answers(system, json.dumps(entries).encode())
    assert report.problems == [
        "entry 2: output_content.loud is no reply of a target/neutral/alternative delivery",
        "entry 3: neither a case with output_content and audio nor a question with predicted_answer",
    ]
    _, problems = answers_from_results(json.dumps(entries[:1]).encode())
    assert problems == []
    assert import_answers(system, json.dumps(entries[:1]).encode()).problems == [
        "entry 1: no delivery 'id_99_x_y_target.wav'"
    ]
    assert not Reply.objects.exists()
