"""Evaluator blindness through the bytes: imported outputs and study clips are clean re-encodings.

Outputs tagged with their system's name (RIFF INFO, ID3, Vorbis comments, FLAC tags) are imported
from a zip and from an S3 prefix; what an evaluator's browser is then served contains no trace of
the tags, and no link or key names the system, the item or the file as sent.
"""

from __future__ import annotations

import io

import pytest

from evaluation.outputs.access import blind_audio_url
from evaluation.outputs.audio_sources import S3AudioSource, ZipAudioSource
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import ModelOutput, System
from evaluation.studies.models import StudyStimulus
from tests.evaluation.judging_support import BenchmarkItemFactory, jsonl, zip_of
from tests.evaluation.studies.support import build_world, make_study
from tests.support.s3_server import S3Server
from tests.support.tagged_audio import SYSTEM_NAME, leaks, tagged_files
from webapp.models import User
from webapp.storage import new_media_key, read_media, save_media

pytestmark = pytest.mark.usefixtures("media_root")
CONTAINERS = ("wav", "mp3", "ogg", "flac")


def _rows() -> bytes:
    return jsonl(
        *(
            {"item_id": f"EE-{n}", "response": "I hear you.", "audio": f"{SYSTEM_NAME}/EE-{n}.{ext}"}
            for n, ext in enumerate(CONTAINERS, start=1)
        )
    )


def _files() -> dict[str, bytes]:
    tagged = tagged_files()
    return {f"{SYSTEM_NAME}/EE-{n}.{ext}": tagged[ext] for n, ext in enumerate(CONTAINERS, start=1)}


def _assert_served_clean(client_for, users: dict[str, User], system: System) -> None:
    outputs = list(ModelOutput.objects.filter(system=system).select_related("item"))
    assert len(outputs) == len(CONTAINERS)
    evaluator = users["evaluator"]
    for output in outputs:
        key = output.response_audio_key
        assert SYSTEM_NAME.lower() not in key.lower() and output.item.external_id not in key
        assert key.endswith(".wav")
        url = blind_audio_url(key, evaluator)
        assert SYSTEM_NAME.lower() not in url.lower() and output.item.external_id not in url
        response = client_for("evaluator").get(url)
        assert response.status_code == 200
        assert response["Content-Disposition"] == "inline"
        served = b"".join(response.streaming_content)
        assert served[:4] == b"RIFF" and leaks(served) == []
        assert leaks(read_media(key)) == []


def test_tagged_outputs_from_a_zip_reach_evaluators_without_their_tags(db, users, client_for) -> None:
    for n in range(1, len(CONTAINERS) + 1):
        BenchmarkItemFactory.create(external_id=f"EE-{n}")
    system = System.objects.create(name=SYSTEM_NAME)
    report = import_outputs(system, "echoeval-v1", _rows(), ZipAudioSource(io.BytesIO(zip_of(_files()))))
    assert report.imported, report.errors
    _assert_served_clean(client_for, users, system)


def test_tagged_outputs_from_an_s3_prefix_reach_evaluators_without_their_tags(
    db, users, client_for, s3_server: S3Server
) -> None:
    client = s3_server.client()
    client.create_bucket(Bucket="tagged-outputs")
    for name, data in _files().items():
        client.put_object(Bucket="tagged-outputs", Key=f"lab/{name}", Body=data)
    for n in range(1, len(CONTAINERS) + 1):
        BenchmarkItemFactory.create(external_id=f"EE-{n}")
    system = System.objects.create(name=SYSTEM_NAME)
    report = import_outputs(system, "echoeval-v1", _rows(), S3AudioSource("s3://tagged-outputs/lab/"))
    assert report.imported, report.errors
    _assert_served_clean(client_for, users, system)


def test_study_clips_are_re_encoded_even_from_outputs_stored_with_tags(make_user, users) -> None:
    world = build_world(make_user, n_systems=2, n_items=3)
    tagged = tagged_files()
    # Outputs imported before imports cleaned their audio still hold the files as sent.
    for output, container in zip(world.outputs, CONTAINERS * 2, strict=False):
        output.response_audio_key = save_media(new_media_key("model_output", container), tagged[container])
        output.save(update_fields=["response_audio_key"])
    study = make_study(world, [users["evaluator"]], users["admin"], items_per_system=3)

    clips = StudyStimulus.objects.filter(study=study).exclude(audio_key="")
    assert clips.exists()
    for clip in clips:
        data = read_media(clip.audio_key)
        assert data[:4] == b"RIFF" and leaks(data) == [], clip.kind
        assert clip.audio_seconds > 0


def test_outputs_stored_before_cleaning_are_re_encoded_by_the_command(db, media_root) -> None:
    from django.core.management import call_command

    from annotation.audio.clean import is_clean_wav
    from tests.factories import ModelOutputFactory

    tagged = tagged_files()
    outputs = [
        ModelOutputFactory.create(
            response_audio_key=save_media(new_media_key("model_output", ext), tagged[ext])
        )
        for ext in CONTAINERS
    ]
    old_keys = [output.response_audio_key for output in outputs]
    out = io.StringIO()
    call_command("clean_blind_audio", stdout=out)
    assert "ModelOutput: 4 re-encoded" in out.getvalue()
    for output, old_key in zip(outputs, old_keys, strict=True):
        output.refresh_from_db()
        data = read_media(output.response_audio_key)
        assert output.response_audio_key != old_key and is_clean_wav(data) and leaks(data) == []
        assert read_media(old_key) == tagged[old_key.rsplit(".", 1)[1]]  # kept: nothing destroyed

    again = io.StringIO()
    call_command("clean_blind_audio", "--delete-originals", stdout=again)
    assert "ModelOutput: 0 re-encoded" in again.getvalue()


def test_the_rubric_scoring_pages_serve_clean_audio_only_to_their_evaluator(
    db, users, client_for, make_user
) -> None:
    import re

    from django.test import Client
    from django.urls import reverse

    from evaluation.judging.human_scoring import draw_rubric_sample
    from webapp.roles import Role

    for n in range(1, len(CONTAINERS) + 1):
        BenchmarkItemFactory.create(external_id=f"EE-{n}")
    system = System.objects.create(name=SYSTEM_NAME)
    report = import_outputs(system, "echoeval-v1", _rows(), ZipAudioSource(io.BytesIO(zip_of(_files()))))
    assert report.imported, report.errors
    sample = draw_rubric_sample(
        name="blind", benchmark_version="echoeval-v1", n_items=4, evaluators=[users["evaluator"]], seed=3
    )
    client = client_for("evaluator")
    stranger = Client()
    stranger.force_login(make_user(Role.EVALUATOR))
    served = 0
    for entry in sample.entries.select_related("output"):
        page = client.get(reverse("evaluation:rubric_score", args=[sample.pk, entry.output.public_id]))
        html = page.content.decode()
        assert SYSTEM_NAME.lower() not in html.lower()
        for url in re.findall(r'<audio[^>]*src="([^"]+)"', html):
            response = client.get(url)
            assert response.status_code == 200
            assert leaks(b"".join(response.streaming_content)) == []
            assert stranger.get(url).status_code == 404  # a link copied to another evaluator
            assert Client().get(url).status_code == 302  # or to a logged-out browser
            served += 1
    assert served >= len(CONTAINERS)
