"""Blindness in dialogue studies: nothing an evaluator receives, page, link or audio byte, names a system."""

from __future__ import annotations

import re
from datetime import timedelta

from django.urls import reverse

from evaluation.studies.models import StudyAssignment, StudyTurn
from evaluation.studies.workflows import record_turn_playback
from tests.evaluation.studies.dialogues.support import (
    build_dialogue_world,
    make_dialogue_study,
    show_long_ago,
)
from tests.support.tagged_audio import wav_with_riff_info
from webapp.models import User
from webapp.roles import Role
from webapp.storage import key_for_viewer, read_media

AUDIO_SRC = re.compile(r'<audio[^>]*src="([^"]+)"')


def _key_behind(url: str, viewer: User) -> str:
    key = key_for_viewer(url.rstrip("/").rsplit("/", 1)[-1], viewer)
    assert key is not None
    return key


def test_a_dialogue_rater_never_receives_anything_that_names_a_system(make_user, users, client_for):
    world = build_dialogue_world(
        make_user,
        n_systems=2,
        n_dialogues=2,
        turns=2,
        reply_audio=lambda system, item: wav_with_riff_info(system.name),
    )
    # the imported replies carry their system's name in their tags; what raters get must not
    assert world.systems[0].name.encode() in read_media(world.outputs[0].response_audio_key)
    rater = users["evaluator"]
    study = make_dialogue_study(
        world, [rater, make_user(Role.EVALUATOR)], users["admin"], ratings_per_output=1
    )
    client = client_for("evaluator")
    received: list[str] = [client.get(reverse("evaluation:evaluator_queue")).content.decode()]
    audio_urls: list[str] = []
    while (assignment := StudyAssignment.objects.next_for(study, rater)) is not None:
        page = client.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
        received.append(page)
        audio_urls += AUDIO_SRC.findall(page)
        shown = show_long_ago(assignment)
        for turn in StudyTurn.objects.filter(stimulus=assignment.stimulus).order_by("turn"):
            record_turn_playback(assignment, turn.turn, now=shown + timedelta(minutes=turn.turn))
            played = client.post(reverse("evaluation:turn_played", args=[assignment.public_id, turn.turn]))
            assert played.status_code == 200
            received.append(played.content.decode())
        received.append(client.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode())
        for turn in StudyTurn.objects.filter(stimulus=assignment.stimulus):
            scores = {f"score_{key}": "3" for key in study.dimensions}
            saved = client.post(
                reverse("evaluation:submit_turn", args=[assignment.public_id, turn.turn]), scores
            )
            received.append(saved["Location"])
    received.append(client.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode())
    everything = "\n".join(received)

    forbidden = [system.name for system in world.systems] + [
        system.anonymous_code for system in world.systems
    ]
    forbidden += [str(output.public_id) for output in world.outputs]
    forbidden += [output.response_audio_key for output in world.outputs]
    forbidden += [study.name]
    assert [text for text in forbidden if text.lower() in everything.lower()] == []
    assert "data-system" not in everything

    keys = [_key_behind(url, rater) for url in audio_urls]
    replies = [key for key in keys if key.startswith("audio/stimulus/")]
    assert len(replies) == 2 * StudyAssignment.objects.filter(study=study, evaluator=rater).count()
    assert all(key.startswith(("audio/stimulus/", "audio/take/")) for key in keys)
    for url in audio_urls:
        served = client.get(url)
        body = b"".join(served.streaming_content) if served.streaming else served.content
        assert served.status_code == 200 and body[:4] == b"RIFF"
        assert not any(system.name.encode() in body for system in world.systems)
