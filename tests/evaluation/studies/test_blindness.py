"""Blindness: nothing an evaluator's browser receives in a whole study identifies the system."""

from __future__ import annotations

import re
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from evaluation.studies.models import StudyAssignment
from tests.evaluation.studies.support import build_world, make_study
from tests.support.listening import play_links
from webapp.models import User
from webapp.roles import Role
from webapp.storage import key_for_viewer

AUDIO_SRC = re.compile(r'<audio[^>]*src="([^"]+)"')


def _key_behind(url: str, viewer: User) -> str:
    key = key_for_viewer(url.rstrip("/").rsplit("/", 1)[-1], viewer)
    assert key is not None
    return key


def test_an_evaluator_never_receives_anything_that_names_a_system(make_user, users, client_for):
    world = build_world(make_user, n_systems=3, n_items=4)
    rater = users["evaluator"]
    study = make_study(
        world, [rater, make_user(Role.EVALUATOR)], users["admin"], ratings_per_output=2, items_per_system=3
    )
    client = client_for("evaluator")
    received: list[str] = [client.get(reverse("evaluation:evaluator_queue")).content.decode()]
    audio_urls: list[str] = []
    while (assignment := StudyAssignment.objects.next_for(study, rater)) is not None:
        page = client.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
        received.append(page)
        audio_urls += AUDIO_SRC.findall(page)
        StudyAssignment.objects.filter(pk=assignment.pk).update(
            presented_at=timezone.now() - timedelta(seconds=60)
        )
        play_links(client, rater, AUDIO_SRC.findall(page))  # the page's players fetch their audio
        played = client.post(reverse("evaluation:assignment_played", args=[assignment.public_id]))
        received.append(played.content.decode())
        scores = {f"score_{key}": "3" for key in study.dimensions}
        submitted = client.post(reverse("evaluation:submit_assignment", args=[assignment.public_id]), scores)
        received.append(submitted["Location"])
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
    assert keys and all(key.startswith(("audio/stimulus/", "audio/take/")) for key in keys)
    reply_keys = {key for key in keys if key.startswith("audio/stimulus/")}
    assert len(reply_keys) == StudyAssignment.objects.filter(study=study, evaluator=rater).count()
    served = client.get(audio_urls[0])
    assert served.status_code == 200 and served["Content-Disposition"] == "inline"
