"""Response audio can come from an S3 prefix instead of a zip upload."""

from __future__ import annotations

import pytest
from django.core.files.storage import default_storage

from evaluation.outputs.audio_sources import S3AudioSource
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import ModelOutput, System
from tests.evaluation.judging_support import BenchmarkItemFactory, echochat_text, jsonl
from tests.factories import tiny_wav
from tests.support.s3_server import S3Server

pytestmark = pytest.mark.usefixtures("media_root")


def test_outputs_import_with_audio_listed_under_an_s3_prefix(db: None, s3_server: S3Server) -> None:
    client = s3_server.client()
    client.create_bucket(Bucket="runs")
    client.put_object(Bucket="runs", Key="qwen/EE-1.wav", Body=tiny_wav())
    client.put_object(Bucket="runs", Key="qwen/clips/EE-2.wav", Body=tiny_wav(frequency=330.0))
    client.put_object(Bucket="runs", Key="other/EE-3.wav", Body=tiny_wav())
    BenchmarkItemFactory.create(external_id="EE-1"), BenchmarkItemFactory.create(external_id="EE-2")
    system = System.objects.create(name="Qwen-S3")

    source = S3AudioSource("s3://runs/qwen")
    assert source.names() == {"EE-1.wav", "clips/EE-2.wav"}
    report = import_outputs(
        system,
        "echoeval-v1",
        jsonl(
            {"item_id": "EE-1", "output": echochat_text()},
            {"item_id": "EE-2", "response": "I hear you.", "audio": "clips/EE-2.wav"},
        ),
        source,
    )

    assert report.imported, report.errors
    outputs = {output.item.external_id: output for output in ModelOutput.objects.filter(system=system)}
    assert set(outputs) == {"EE-1", "EE-2"}
    for output in outputs.values():
        assert default_storage.exists(output.response_audio_key)
        assert "qwen" not in output.response_audio_key


def test_a_missing_s3_object_blocks_the_import(db: None, s3_server: S3Server) -> None:
    s3_server.client().create_bucket(Bucket="runs")
    BenchmarkItemFactory.create(external_id="EE-1")
    system = System.objects.create(name="Qwen-S3")
    report = import_outputs(
        system, "echoeval-v1", jsonl({"item_id": "EE-1", "output": "Hi"}), S3AudioSource("s3://runs/empty/")
    )
    assert not report.imported
    assert any("audio" in problem.message for problem in report.errors)
    assert not ModelOutput.objects.exists()
