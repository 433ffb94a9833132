"""Harness result files (VoiceBench, URO-Bench, AudioBench) imported as the harnesses write them:
every row placed on an item (by id, audio checksum or question) or reported, the harness's own
scores kept beside the outputs."""

from __future__ import annotations

import hashlib
import json

import pytest

from evaluation.outputs.harnesses import AUDIOBENCH, UROBENCH, VOICEBENCH, read_harness
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import ModelOutput, System
from tests.evaluation.judging_support import BenchmarkItemFactory, jsonl
from tests.factories import TakeFactory
from webapp.storage import read_media

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


@pytest.fixture
def system() -> System:
    return System.objects.create(name="harnessed", text_only=True)


def _outputs(system: System) -> dict[str, tuple[str, dict[str, float]]]:
    return {
        output.item.external_id: (output.response_text, output.harness_metrics)
        for output in ModelOutput.objects.filter(system=system).select_related("item")
    }


def test_voicebench_rows_are_placed_by_id_checksum_and_prompt(system: System) -> None:
    BenchmarkItemFactory(external_id="EE-0001")
    by_sha = BenchmarkItemFactory.create(external_id="EE-0002")
    take = TakeFactory.create(item=by_sha)
    by_sha.recording = take
    by_sha.save()
    BenchmarkItemFactory(external_id="EE-0003", text="Why is the sky blue?")
    digest = hashlib.sha256(read_media(take.audio_key)).hexdigest()
    # VoiceBench's main.py keeps the dataset's fields and adds "response"; api_judge.py adds "score".
    data = jsonl(
        {"item_id": "EE-0001", "prompt": "Script of EE-0001.", "response": "I hear you.", "score": ["4"]},
        {"audio_sha256": digest, "prompt": "?", "response": "That is hard.", "score": ["Yes"]},
        {"prompt": "why is the  sky blue?", "response": "Rayleigh scattering."},
        {"prompt": "A question no item has", "response": "Lost."},
        {"item_id": "EE-9999", "prompt": "", "response": "Nobody asked."},
    )
    report = import_outputs(system, "echoeval-v1", data, None, skip_invalid_rows=True, format_name=VOICEBENCH)
    assert report.imported and report.created == 3 and report.rows == 5
    assert [(problem.line, problem.message) for problem in report.errors] == [
        (4, "not placed: no item (or more than one) has this question as its script"),
        (5, "not placed: no item has the id EE-9999"),
    ]
    assert _outputs(system) == {
        "EE-0001": ("I hear you.", {"voicebench.score": 4.0}),
        "EE-0002": ("That is hard.", {"voicebench.score": 1.0}),
        "EE-0003": ("Rayleigh scattering.", {}),
    }


def test_a_harness_file_with_an_unplaced_row_imports_nothing_unless_told(system: System) -> None:
    BenchmarkItemFactory(external_id="EE-0001")
    data = jsonl(
        {"item_id": "EE-0001", "prompt": "", "response": "Fine."},
        {"prompt": "no such script", "response": "Lost."},
    )
    report = import_outputs(system, "echoeval-v1", data, None, format_name=VOICEBENCH)
    assert not report.imported and [problem.line for problem in report.errors] == [2]
    assert not ModelOutput.objects.exists()


def test_urobench_result_file_keeps_the_mean_judge_score_and_skips_the_summary(system: System) -> None:
    BenchmarkItemFactory(external_id="EE-0001", text="My dog died last week.")
    BenchmarkItemFactory(external_id="EE-0002", text="I got the job!")
    # mark_gpt.py: {"question", "answer", "reference", "score": [three judge answers]}, then a summary.
    data = jsonl(
        {
            "question": "My dog died last week.",
            "answer": "I'm so sorry.",
            "reference": "",
            "score": ["4", "5", "3"],
        },
        {
            "question": "I got the job!",
            "answer": "Congratulations!",
            "reference": "",
            "score": ["5", "5", "5"],
        },
        {"final_score": 86.7},
    )
    report = import_outputs(system, "echoeval-v1", data, None, format_name=UROBENCH)
    assert report.imported and report.errors == []
    assert _outputs(system) == {
        "EE-0001": ("I'm so sorry.", {"urobench.score": 4.0}),
        "EE-0002": ("Congratulations!", {"urobench.score": 5.0}),
    }


def test_audiobench_per_dataset_json_is_read_as_a_list(system: System) -> None:
    BenchmarkItemFactory(external_id="EE-0001")
    # format_model_predictions: the input rows without "audio", plus "model_prediction".
    document = [
        {
            "instruction": "Reply to the speaker.",
            "reference": "",
            "task_type": "SI",
            "model_prediction": "Tell me more.",
            "item_id": "EE-0001",
        },
        {
            "instruction": "Reply to the speaker.",
            "reference": "",
            "task_type": "SI",
            "model_prediction": "Hm.",
        },
        {"instruction": "x", "task_type": "SI"},
    ]
    report = import_outputs(
        system,
        "echoeval-v1",
        json.dumps(document).encode(),
        None,
        skip_invalid_rows=True,
        format_name=AUDIOBENCH,
    )
    assert report.imported and report.created == 1
    assert [(problem.line, problem.message) for problem in report.errors] == [
        (2, "not placed: no item (or more than one) has this question as its script"),
        (3, 'no reply: "model_prediction" must be text'),
    ]
    assert _outputs(system) == {"EE-0001": ("Tell me more.", {})}


@pytest.mark.parametrize(
    ("format_name", "data", "message"),
    [
        (VOICEBENCH, b"\xff\xfe", "the file is not UTF-8 text"),
        (VOICEBENCH, b'{"response": 3}', 'no reply: "response" must be text'),
        (
            VOICEBENCH,
            b'{"response": "a", "score": ["great"]}',
            "\"score\" must hold numbers or Yes/No, not 'great'",
        ),
        (VOICEBENCH, b"[1, 2", "not valid JSON"),
        (AUDIOBENCH, b'{"model_prediction": "a"}', "an AudioBench result is one JSON list of rows"),
        (UROBENCH, b'["a"]', "a row must be a JSON object"),
        (UROBENCH, b"", "the file holds no rows"),
    ],
)
def test_bad_harness_rows_are_reported_with_a_clear_reason(
    format_name: str, data: bytes, message: str
) -> None:
    rows, problems = read_harness(format_name, data)
    assert rows == [] and len(problems) == 1 and message in problems[0].message


def test_the_import_page_takes_a_harness_file_and_only_admins_may(system: System, client_for) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    BenchmarkItemFactory(external_id="EE-0001")
    url = reverse("evaluation:output_import", args=[system.pk])

    def post(role: str) -> int:
        upload = SimpleUploadedFile(
            "alpacaeval.jsonl", jsonl({"item_id": "EE-0001", "prompt": "", "response": "Hi."})
        )
        body = {"benchmark_version": "echoeval-v1", "format_name": VOICEBENCH, "rows": upload}
        return client_for(role).post(url, body).status_code

    assert post("annotator") == 403 and not ModelOutput.objects.exists()
    assert post("admin") == 200
    assert _outputs(system) == {"EE-0001": ("Hi.", {})}


def test_the_drilldown_shows_the_harness_score_beside_echostudio_s(system: System, client_for) -> None:
    from django.urls import reverse

    item = BenchmarkItemFactory.create(external_id="EE-0001")
    data = jsonl({"item_id": "EE-0001", "prompt": "", "response": "Hi.", "score": ["3", "4"]})
    assert import_outputs(system, "echoeval-v1", data, None, format_name=VOICEBENCH).imported
    page = client_for("admin").get(reverse("evaluation:item_detail", args=[item.pk])).content.decode()
    assert "The harness's own scores (not EchoStudio's): voicebench.score 3.50" in page
