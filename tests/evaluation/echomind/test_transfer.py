"""The released layout round trip, answers import and the numbers the results compute from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.recording.models import Item, Take
from evaluation.echomind import reports
from evaluation.echomind.answers import import_answers
from evaluation.echomind.models import (
    Answer,
    Delivery,
    DeliverySet,
    Question,
    Reply,
    Transcript,
    VocalAttribute,
)
from evaluation.echomind.transfer import export_layout, import_layout, read_archive, write_archive
from tests.evaluation.echomind.fixture import audio_name, echomind_files
from tests.factories import SystemFactory, UserFactory

pytestmark = pytest.mark.django_db


def _forget_everything() -> None:
    """Empty the studio as a fresh database would be: work products are never deleted by the app
    (they are archived), so this stand-in for another database removes the rows underneath it."""
    item_ids = list(Delivery.objects.values_list("item_id", flat=True))
    Item.objects.filter(pk__in=item_ids).update(recording=None)
    for rows in (
        Answer.objects.all(),
        Transcript.objects.all(),
        Reply.objects.all(),
        Question.objects.all(),
        Delivery.objects.all(),
        DeliverySet.objects.all(),
        Take.objects.filter(item_id__in=item_ids),
        Item.objects.filter(pk__in=item_ids),
    ):
        rows._raw_delete(rows.db)


def test_a_set_in_echomind_s_layout_imports_exports_and_reimports_unchanged(media_root: Path) -> None:
    admin = UserFactory.create()
    fixture = echomind_files()
    report = import_layout(fixture, admin)
    assert report.imported, report.problems
    assert (report.cases, report.questions, report.audio) == (3, 5, 7)
    # The speaker case has no neutral delivery; every delivery is an item with its instruction.
    assert sorted(Delivery.objects.filter(delivery_set__case_id="id_3").values_list("role", flat=True)) == [
        "alternative",
        "target",
    ]
    target = Delivery.objects.get(delivery_set__case_id="id_1", role="target")
    assert "Sad tone" in target.item.instructions and target.item.state == Item.State.RECORDED

    exported = read_archive(write_archive(export_layout()))
    assert {name: data for name, data in exported.items() if not name.startswith("answers/")} == fixture

    _forget_everything()
    again = import_layout(exported, admin)
    assert again.imported, again.problems
    assert export_layout() == exported
    # Importing the same files once more changes nothing and says so.
    third = import_layout(exported, admin)
    assert (third.cases, third.unchanged) == (0, 3)
    assert export_layout() == exported


def test_a_bad_question_is_refused_with_its_reason_and_the_rest_imports(media_root: Path) -> None:
    files = echomind_files(with_audio=False)
    bad = json.loads(files["MCQ/reasoning.json"])
    bad[0]["answer"] = "D"  # three options: A-C
    files["MCQ/reasoning.json"] = json.dumps(bad).encode()
    report = import_layout(files, UserFactory.create())
    assert not report.imported
    assert report.problems == ["MCQ/reasoning.json entry 1: the answer must be one of A, B, C"]
    assert (report.cases, report.questions) == (3, 4)
    outcome = {o.name: o for o in report.files}["MCQ/reasoning.json"]
    assert outcome.status == "imported" and "refused: MCQ/reasoning.json entry 1" in outcome.detail
    assert not Question.objects.filter(question_id="r1").exists()
    assert VocalAttribute.objects.count() == 45  # the default taxonomy is there to import against


def test_answers_are_parsed_counted_and_scored_as_by_hand(media_root: Path) -> None:
    import_layout(echomind_files(with_audio=False), UserFactory.create())
    system = SystemFactory.create(name="Parrot")
    lines = [
        {"question_id": "u1", "answer": "The answer is: [B]"},  # right
        {"question_id": "u2", "answer": "I would say happy, or maybe neutral"},  # unparseable
        {"question_id": "u3", "answer": "A"},  # right
        {"question_id": "r1", "answer": "The answer is: [B]"},  # wrong
        {"question_id": "r2", "answer": "(A) Others are asleep"},  # right
        {"delivery": audio_name(1, "sad_tone", "weather", "target"), "transcript": "The forecast says it will rain"},
        {"delivery": audio_name(2, "whispering", "work", "target"), "transcript": "I finished the report this afternoon"},
        {"delivery": audio_name(1, "sad_tone", "weather", "target"), "prompt": "none", "response": "Oh no.", "scores": {"c1": 4, "ves": 3}},
        {"delivery": audio_name(1, "sad_tone", "weather", "neutral"), "prompt": "none", "response": "Okay.", "scores": {"c1": 2, "ves": 2}},
        {"delivery": audio_name(1, "sad_tone", "weather", "alternative"), "prompt": "none", "response": "Great!", "scores": {"c1": 3, "ves": 1}},
    ]  # fmt: skip
    report = import_answers(system, "\n".join(json.dumps(line) for line in lines).encode())
    assert (report.answers, report.unparsed, report.transcripts, report.replies) == (5, 1, 2, 3)

    (row,) = reports.board()
    assert (row.understanding.correct, row.understanding.asked, row.understanding.unparsed) == (2, 3, 1)
    assert (row.reasoning.correct, row.reasoning.asked) == (1, 2)
    # "tomorrow" missing: 1 error over 7 + 6 reference words.
    assert row.wer == pytest.approx(1 / 13)
    assert row.replies["c1"] == pytest.approx(3.0) and row.replies["dnsmos"] is None
    effects = {(e.metric, e.contrast): e.mean for e in reports.results().effects}
    assert effects[("c1", "target - neutral")] == 2.0
    assert effects[("ves", "target - alternative")] == 2.0

    # Importing again replaces the system's rows; a bad line writes nothing.
    refused = import_answers(system, b'{"question_id": "nope", "answer": "A"}\n')
    assert refused.problems == ["line 1: no question nope"]
    assert reports.board()[0].understanding.asked == 3


def test_a_re_import_archives_the_answers_and_transcripts_it_replaces(media_root: Path) -> None:
    import_layout(echomind_files(with_audio=False), UserFactory.create())
    system = SystemFactory.create(name="Parrot")
    target = audio_name(1, "sad_tone", "weather", "target")
    first = [{"question_id": "u1", "answer": "A"}, {"delivery": target, "transcript": "It will snow"}]
    again = [{"question_id": "u1", "answer": "[B]"}, {"delivery": target, "transcript": "It will rain"}]
    for lines in (first, again):
        report = import_answers(system, "\n".join(json.dumps(line) for line in lines).encode())
        assert not report.problems, report.problems

    for rows in (Answer.objects.filter(system=system), Transcript.objects.filter(system=system)):
        assert (rows.count(), rows.in_use().count(), rows.archived().count()) == (2, 1, 1)
        assert rows.archived().get().archive_reason == "replaced by a re-import"
    assert Answer.objects.in_use().get(system=system).letter == "B"
    # The board counts the answer in use once: u1 right, 1 of the 3 understanding questions asked.
    (row,) = reports.board()
    assert (row.understanding.correct, row.understanding.unparsed) == (1, 0)
    exported = export_layout()["answers/Parrot.jsonl"].decode()
    assert '"[B]"' in exported and '"A"' not in exported and "snow" not in exported
