"""Dialogue pages: who may see which dialogue, the trajectory, JSONL import and export, the preview."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.audio.joining import wav_duration
from annotation.recording.models import Dialogue
from tests.factories import DialogueFactory, TakeFactory
from webapp.models import User
from webapp.roles import Role


def line(dialogue_id: str, *texts: str) -> str:
    turns = [
        {"text": text, "scenario": "implicit", "target_emotion": "sad", "expected_strategy": "validation"}
        for text in texts
    ]
    return json.dumps({"dialogue_id": dialogue_id, "topic": "moving house", "turns": turns}) + "\n"


@pytest.fixture
def mine_and_theirs(users: dict[str, User], make_user) -> tuple[Dialogue, Dialogue]:
    other = make_user(Role.VOICE_ACTOR, "other-actor")
    return (
        DialogueFactory.create(external_id="ED-MINE", turns=3, turns__actor=users["actor"]),
        DialogueFactory.create(external_id="ED-THEIRS", turns=2, turns__actor=other),
    )


def test_an_admin_sees_every_dialogue_with_its_actor(mine_and_theirs, client_for) -> None:
    admin = client_for("admin")

    listing = admin.get(reverse("annotation:dialogue_list")).content.decode()
    detail = admin.get(reverse("annotation:dialogue_detail", args=["ED-THEIRS"])).content.decode()

    assert "ED-MINE" in listing and "ED-THEIRS" in listing
    assert 'data-testid="dialogue-actor">other-actor<' in detail
    assert detail.count('data-testid="turn-state"') == 2
    assert "emotional validation" in detail and "That sounds hard; tell me more about turn 2." in detail


def test_an_actor_sees_only_their_own_dialogues_and_no_names(mine_and_theirs, client_for) -> None:
    actor = client_for("actor")

    listing = actor.get(reverse("annotation:dialogue_list")).content.decode()
    mine = actor.get(reverse("annotation:dialogue_detail", args=["ED-MINE"]))
    theirs = actor.get(reverse("annotation:dialogue_detail", args=["ED-THEIRS"]))

    assert "ED-MINE" in listing and "ED-THEIRS" not in listing
    assert mine.status_code == 200 and theirs.status_code == 404
    page = mine.content.decode()
    assert "dialogue-actor" not in page and "Build the preview" not in page
    assert page.count(">Record</a>") == 1  # turn 1 only: the later turns wait for it


@pytest.mark.parametrize("who", ["reviewer", "annotator", "lead", "evaluator", "norole"])
def test_other_roles_see_no_dialogue_page(mine_and_theirs, client_for, who: str) -> None:
    client = client_for(who)

    for url in (
        reverse("annotation:dialogue_list"),
        reverse("annotation:dialogue_detail", args=["ED-MINE"]),
        reverse("annotation:import_dialogues"),
        reverse("annotation:export_dialogues"),
    ):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("annotation:dialogue_preview", args=["ED-MINE"])).status_code == 403


def test_anonymous_visitors_are_sent_to_log_in(mine_and_theirs) -> None:
    for url in (reverse("annotation:dialogue_list"), reverse("annotation:dialogue_detail", args=["ED-MINE"])):
        assert Client().get(url).status_code == 302


def test_actors_may_not_import_export_or_preview(mine_and_theirs, client_for) -> None:
    actor = client_for("actor")

    assert actor.get(reverse("annotation:import_dialogues")).status_code == 403
    assert actor.get(reverse("annotation:export_dialogues")).status_code == 403
    assert actor.post(reverse("annotation:dialogue_preview", args=["ED-MINE"])).status_code == 403


def test_an_import_with_one_bad_line_writes_nothing_and_lists_the_problem(db: None, client_for) -> None:
    data = (line("ED-1", "Hello.", "Again.") + line("ED-2", "") + line("ED-1", "Repeated.")).encode()

    page = client_for("admin").post(
        reverse("annotation:import_dialogues"), {"file": SimpleUploadedFile("d.jsonl", data)}
    )

    text = page.content.decode()
    assert 'data-imported="false"' in text and 'data-testid="import-errors"' in text
    assert "line 2" in text.lower() and "already appears on line 1" in text
    assert not Dialogue.objects.exists()


def test_an_import_then_export_round_trips(db: None, client_for) -> None:
    data = (line("ED-1", "Hello.", "Again.") + line("ED-2", "Just one turn.")).encode()
    admin = client_for("admin")

    page = admin.post(reverse("annotation:import_dialogues"), {"file": SimpleUploadedFile("d.jsonl", data)})
    exported = b"".join(admin.get(reverse("annotation:export_dialogues")).streaming_content).decode()

    assert 'data-testid="created">2<' in page.content.decode()
    assert [json.loads(row)["dialogue_id"] for row in exported.splitlines()] == ["ED-1", "ED-2"]
    assert [turn["text"] for turn in json.loads(exported.splitlines()[0])["turns"]] == ["Hello.", "Again."]


def test_the_preview_joins_recorded_turns_and_replies(users: dict[str, User], media_root, client_for) -> None:
    from annotation.audio.joining import samples_as_wav
    from annotation.audio.synthesis import synthesize
    from webapp.storage import save_media

    dialogue = DialogueFactory.create(external_id="ED-P", turns=3, turns__actor=users["actor"])
    lengths = []
    for item in dialogue.turns.order_by("turn")[:2]:
        speech = synthesize(item.text)
        key = save_media(f"audio/take/{item.turn}x.wav", samples_as_wav(speech.samples, speech.sample_rate))
        TakeFactory.create(item=item, actor=users["actor"], status="in_review", audio_key=key)
        lengths.append(wav_duration((media_root / key).read_bytes()))
    admin = client_for("admin")

    admin.post(reverse("annotation:dialogue_preview", args=["ED-P"]))
    page = admin.get(reverse("annotation:dialogue_detail", args=["ED-P"])).content.decode()

    previews = list((media_root / "audio" / "preview").iterdir())
    assert len(previews) == 1 and 'data-testid="preview-audio"' in page
    replies = [wav_duration(path.read_bytes()) for path in (media_root / "audio" / "reply").iterdir()]
    # two takes, two replies, three gaps of 0.6 s
    assert wav_duration(previews[0].read_bytes()) == pytest.approx(
        sum(lengths) + sum(replies) + 1.8, abs=0.02
    )
