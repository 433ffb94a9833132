"""Importing outputs: EchoChat rows parsed, free-form kept, problems reported, re-import replaces."""

from __future__ import annotations

import io

import pytest
from django.core.files.storage import default_storage

from evaluation.judging.models import Judgement
from evaluation.outputs.audio_sources import ZipAudioSource
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import ModelOutput, System
from evaluation.outputs.parsing import parse_rows
from tests.evaluation.judging_support import BenchmarkItemFactory, echochat_text, jsonl, zip_of
from tests.factories import JudgeConfigFactory, JudgementFactory, tiny_wav

pytestmark = pytest.mark.usefixtures("media_root")


def test_echochat_rows_are_split_into_spans_fields_and_strategies() -> None:
    (row,), problems = parse_rows(jsonl({"item_id": "EE-1", "output": echochat_text()}))
    assert problems == []
    assert row.structured and row.parse_problems == []
    assert row.perception_text == "Sad, quiet voice; loneliness under a casual tone."
    assert row.reasoning_fields == {
        "context": "Eating alone again",
        "latent_need": "connection",
        "core_demand": "feel less alone",
        "constraints": "do not lecture",
        "strategy": ["emotional validation", "questioning"],
    }
    assert row.strategy_text.startswith("Strategies: emotional validation; questioning")
    assert row.response_text == "That sounds lonely. Do you want to tell me about your evening?"


def test_free_form_outputs_are_stored_as_given() -> None:
    text = "  Oh no, that sounds hard.\nI'm here for you.  "
    (row,), _ = parse_rows(jsonl({"item_id": "EE-1", "output": text}))
    assert (row.structured, row.raw_text, row.response_text, row.reasoning_fields) == (
        False,
        text,
        "Oh no, that sounds hard.\nI'm here for you.",
        {},
    )


def test_stage_fields_with_reasoning_as_an_object() -> None:
    (row,), _ = parse_rows(
        jsonl(
            {
                "item_id": "EE-1",
                "perception": "sad",
                "reasoning": {"context": "alone", "latent_need": "company", "core_demand": "be heard"},
                "strategy": ["reassurance"],
                "response": "I'm with you.",
            }
        )
    )
    assert row.reasoning_fields == {
        "context": "alone",
        "latent_need": "company",
        "core_demand": "be heard",
        "strategy": ["reassurance"],
    }
    assert row.reasoning_text == "Context: alone\nLatent need: company\nCore demand: be heard"
    assert row.strategy_text == "reassurance"


def test_bad_lines_are_reported_with_their_line_numbers() -> None:
    data = b'{"item_id": "EE-1", "output": "hi"}\nnot json\n{"output": "x"}\n{"item_id": "EE-1", "output": "again"}\n'
    rows, problems = parse_rows(data)
    assert [row.item_id for row in rows] == ["EE-1"]
    assert [(problem.line, problem.item_id) for problem in problems] == [(2, ""), (3, ""), (4, "EE-1")]
    assert problems[2].message == "duplicate item: already on line 1"


@pytest.fixture
def system(db: None) -> System:
    return System.objects.create(name="Omni-X", category=System.Category.OMNI)


def _upload(system: System, rows: bytes, files: dict[str, bytes], skip_invalid_rows: bool = False):
    audio = ZipAudioSource(io.BytesIO(zip_of(files)))
    return import_outputs(system, "echoeval-v1", rows, audio, skip_invalid_rows=skip_invalid_rows)


def test_unknown_items_duplicates_and_missing_audio_block_the_import(system: System) -> None:
    BenchmarkItemFactory.create(external_id="EE-1")
    BenchmarkItemFactory.create(external_id="EE-2")
    rows = jsonl(
        {"item_id": "EE-1", "output": "fine"},
        {"item_id": "EE-9", "output": "who?"},
        {"item_id": "EE-1", "output": "twice"},
        {"item_id": "EE-2", "output": "no audio"},
    )
    report = _upload(system, rows, {"EE-1.wav": tiny_wav(), "notes.txt": b"hello"})
    assert not report.imported
    assert [str(problem) for problem in report.errors] == [
        "line 3 (EE-1): duplicate item: already on line 1",
        "line 2 (EE-9): unknown item: no item has this id",
        "line 4 (EE-2): missing audio: no file EE-2.wav (or .mp3, .flac …) in the audio source",
    ]
    assert [str(problem) for problem in report.warnings] == [
        "upload: 1 audio file(s) not used by any row: notes.txt"
    ]
    assert ModelOutput.objects.count() == 0


def test_a_file_that_is_not_audio_is_refused(system: System) -> None:
    BenchmarkItemFactory.create(external_id="EE-1")
    report = _upload(
        system, jsonl({"item_id": "EE-1", "output": "x", "audio": "a/b.wav"}), {"a/b.wav": b"text"}
    )
    assert [problem.message for problem in report.errors] == ["audio a/b.wav is not a recognised audio file"]


def test_skipping_invalid_rows_imports_the_rest(system: System) -> None:
    BenchmarkItemFactory.create(external_id="EE-1")
    report = _upload(
        system,
        jsonl({"item_id": "EE-1", "output": "ok"}, {"item_id": "EE-9", "output": "?"}),
        {"EE-1.wav": tiny_wav()},
        skip_invalid_rows=True,
    )
    assert (report.imported, report.created, report.skipped, len(report.errors)) == (True, 1, 1, 1)


def test_audio_is_stored_under_a_random_key(system: System) -> None:
    BenchmarkItemFactory.create(external_id="EE-1")
    wav = tiny_wav()
    _upload(
        system,
        jsonl({"item_id": "EE-1", "output": echochat_text(), "audio": "clips/omni-x-EE-1.wav"}),
        {"clips/omni-x-EE-1.wav": wav},
    )
    output = ModelOutput.objects.get()
    assert output.structured
    assert output.response_audio_key.startswith("audio/model_output/")
    assert "EE-1" not in output.response_audio_key and "omni" not in output.response_audio_key
    assert default_storage.open(output.response_audio_key).read() == wav


def test_importing_again_replaces_instead_of_duplicating(
    system: System, django_capture_on_commit_callbacks
) -> None:
    # given two imported outputs, both judged
    for external_id in ("EE-1", "EE-2", "EE-3"):
        BenchmarkItemFactory.create(external_id=external_id)
    first = _upload(
        system,
        jsonl({"item_id": "EE-1", "output": "same"}, {"item_id": "EE-2", "output": "old"}),
        {"EE-1.wav": tiny_wav(), "EE-2.wav": tiny_wav(frequency=300)},
    )
    assert first.created == 2
    config = JudgeConfigFactory.create(name="judge")
    same, changed = ModelOutput.objects.order_by("item__external_id")
    JudgementFactory.create(output=same, stage="reasoning", judge_config=config, score=7)
    JudgementFactory.create(output=changed, stage="reasoning", judge_config=config, score=7)
    old_key = changed.response_audio_key

    # when the file comes again with EE-2 changed, EE-3 new and EE-1 unchanged
    with django_capture_on_commit_callbacks(execute=True):
        second = _upload(
            system,
            jsonl(
                {"item_id": "EE-1", "output": "same"},
                {"item_id": "EE-2", "output": "new"},
                {"item_id": "EE-3", "output": "x"},
            ),
            {"EE-1.wav": tiny_wav(), "EE-2.wav": tiny_wav(frequency=400), "EE-3.wav": tiny_wav()},
        )

    # then
    assert (second.created, second.updated, second.unchanged, second.removed) == (1, 1, 1, 0)
    assert ModelOutput.objects.count() == 3
    changed.refresh_from_db()
    assert changed.response_text == "new" and changed.response_audio_key != old_key
    assert not default_storage.exists(old_key)
    # The changed output's judgement scored other text: archived (kept, out of every figure).
    assert list(Judgement.objects.in_use().values_list("output_id", flat=True)) == [same.pk]
    assert list(Judgement.objects.archived().values_list("output_id", flat=True)) == [changed.pk]

    # and a file without EE-1 removes it
    third = _upload(
        system,
        jsonl({"item_id": "EE-2", "output": "new"}, {"item_id": "EE-3", "output": "x"}),
        {"EE-2.wav": tiny_wav(frequency=400), "EE-3.wav": tiny_wav()},
    )
    assert (third.unchanged, third.removed) == (2, 1)
    # Removed from use, not deleted: archived with its judgement and audio, restorable.
    removed = ModelOutput.objects.get(pk=same.pk)
    assert removed.archived_at is not None and "Not in the re-import" in removed.archive_reason
    assert not ModelOutput.objects.for_version("echoeval-v1").filter(pk=same.pk).exists()
    assert default_storage.exists(removed.response_audio_key)
    assert Judgement.objects.filter(output=removed).count() == 1


def test_a_text_only_system_needs_no_audio(system: System) -> None:
    system.text_only = True
    system.save()
    BenchmarkItemFactory.create(external_id="EE-1")
    report = import_outputs(system, "echoeval-v1", jsonl({"item_id": "EE-1", "output": "hello"}), None)
    assert report.imported and ModelOutput.objects.get().response_audio_key == ""
