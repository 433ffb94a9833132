"""POST /api/items/<id>/takes/: 201 with the take, 400 with a reason and nothing left behind, 403/404/409."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import pytest
from django.urls import reverse

from annotation.recording.models import Item, Take
from tests.annotation.audio.audio_corpus import BadUpload, bad_uploads
from tests.annotation.recording.support import upload
from tests.factories import ItemFactory
from webapp.jobs import JobNotRegistered, job_spec
from webapp.models import Job, User
from webapp.storage import key_for_viewer, read_media

BAD_UPLOADS = bad_uploads()


def stored_files(media_root: Path) -> list[Path]:
    return [path for path in media_root.rglob("*") if path.is_file()]


@pytest.mark.parametrize("bad", BAD_UPLOADS, ids=[bad.name for bad in BAD_UPLOADS])
def test_a_bad_upload_gets_a_400_with_its_reason_and_leaves_nothing_behind(
    bad: BadUpload, users: dict[str, User], client_for, media_root: Path, settings
) -> None:
    settings.UPLOAD_MAX_BYTES = bad.limits.max_bytes
    item = ItemFactory.create(actor=users["actor"])

    response = upload(client_for("actor"), item, bad.data, bad.filename)

    assert response.status_code == 400
    assert bad.says in response.json()["detail"]
    assert Take.objects.count() == 0
    assert Job.objects.count() == 0
    assert stored_files(media_root) == []
    item.refresh_from_db()
    assert item.state == Item.State.RECORDING


@pytest.mark.parametrize("container", ["wav", "mp3", "flac", "ogg", "webm", "mp4"])
def test_browser_and_desktop_formats_are_accepted_and_normalised(
    container: str, take_encodings: dict[str, bytes], users: dict[str, User], client_for, media_root: Path
) -> None:
    item = ItemFactory.create(external_id="EE-0001", actor=users["actor"])

    response = upload(client_for("actor"), item, take_encodings[container], f"my take.{container}")

    assert response.status_code == 201, response.content
    body = response.json()
    take = Take.objects.get()
    assert body["id"] == str(take.public_id)
    assert (body["item"], body["status"], body["original_format"]) == ("EE-0001", "analysing", container)
    # Lossy codecs pad the start and end by a few frames.
    assert body["duration_seconds"] == pytest.approx(1.2, abs=0.15)
    with wave.open(io.BytesIO(read_media(take.audio_key))) as normalised:
        assert (normalised.getframerate(), normalised.getnchannels(), normalised.getsampwidth()) == (
            16000,
            1,
            2,
        )
    assert read_media(take.original_key) == take_encodings[container]
    assert len(stored_files(media_root)) == 2
    for key in (take.audio_key, take.original_key):
        assert "actor" not in key and "my take" not in key


def test_the_upload_needs_the_audio_field(users: dict[str, User], client_for) -> None:
    item = ItemFactory.create(actor=users["actor"])
    response = client_for("actor").post(reverse("annotation:api_item_takes", args=[item.external_id]), {})
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Attach the recording as the multipart field “audio”.",
        "problems": [],
    }


def test_an_upload_to_someone_elses_script_is_404(
    users: dict[str, User], make_user, client_for, take_wav: bytes, media_root: Path
) -> None:
    from webapp.roles import Role

    other = make_user(Role.VOICE_ACTOR, "other_actor")
    item = ItemFactory.create(actor=other)

    response = upload(client_for("actor"), item, take_wav)

    assert response.status_code == 404
    assert Take.objects.count() == 0 and stored_files(media_root) == []


@pytest.mark.parametrize("role", ["reviewer", "annotator", "admin", "norole"])
def test_only_voice_actors_may_upload(role: str, users: dict[str, User], client_for, take_wav: bytes) -> None:
    item = ItemFactory.create(actor=users["actor"])
    assert upload(client_for(role), item, take_wav).status_code == 403


def test_anonymous_uploads_are_refused(client, users: dict[str, User], take_wav: bytes) -> None:
    item = ItemFactory.create(actor=users["actor"])
    assert upload(client, item, take_wav).status_code == 403


def test_a_recorded_script_takes_no_new_take(users: dict[str, User], client_for, take_wav: bytes) -> None:
    item = ItemFactory.create(actor=users["actor"], state=Item.State.RECORDED)
    response = upload(client_for("actor"), item, take_wav)
    assert response.status_code == 409
    assert response.json() == {"detail": "This script already has an accepted recording.", "problems": []}


def test_the_actor_lists_their_takes_of_a_script(users: dict[str, User], client_for, take_wav: bytes) -> None:
    item = ItemFactory.create(actor=users["actor"])
    client = client_for("actor")
    created = upload(client, item, take_wav).json()

    listed = client.get(reverse("annotation:api_item_takes", args=[item.external_id])).json()

    # Audio links are signed afresh on every request (they expire): compare the file they name.
    (entry,) = listed
    key_behind = [
        key_for_viewer(url.rsplit("/", 1)[1], users["actor"])
        for url in (entry.pop("audio_url"), created.pop("audio_url"))
    ]
    assert entry == created and key_behind[0] == key_behind[1] is not None


def test_the_analysis_job_kind_is_registered_on_the_default_queue() -> None:
    try:
        spec = job_spec("analyze_take")
    except JobNotRegistered:  # pragma: no cover - the assertion below explains
        pytest.fail("annotation.tasks must register analyze_take")
    assert spec.queue == "default"
