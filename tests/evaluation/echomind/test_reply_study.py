"""Listening studies over systems' spoken replies to EchoMind deliveries, with the studies machinery:
created from the replies, rated blind (no system name reaches an evaluator), results per system."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.echomind.answers import import_answers
from evaluation.echomind.models import Delivery, Reply
from evaluation.echomind.replies.listening import create_reply_study
from evaluation.echomind.transfer import import_layout
from evaluation.outputs.models import System
from evaluation.studies.creation.items import StudySpec
from evaluation.studies.design import NATURALNESS, PROSODY, StudyDesignError
from evaluation.studies.models import Study, StudyAssignment, StudyStimulus
from tests.evaluation.echomind.fixture import echomind_files
from tests.evaluation.studies.support import REPLY_SPEECH, spoken
from tests.factories import SystemFactory
from tests.support.listening import play_links
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db
SYSTEMS = ("SecretParrot", "SecretEcho")
AUDIO_SRC = re.compile(r'<audio[^>]*src="([^"]+)"')


def _answer_every_delivery(system: System, with_audio: bool) -> None:
    rows, files = [], {}
    for delivery in Delivery.objects.all():
        name = delivery.audio_name()
        rows.append({"delivery": name, "prompt": "none", "response": f"{system.name} hears {delivery.role}."})
        rows.append({"delivery": name, "prompt": "enhanced", "response": "An enhanced reply."})
        if with_audio:
            files[name.removesuffix(".wav") + "_response.wav"] = spoken(REPLY_SPEECH)
    report = import_answers(system, "\n".join(json.dumps(row) for row in rows).encode(), files)
    assert not report.problems, report.problems


@pytest.fixture
def replies(users: dict[str, User], media_root: Path) -> list[System]:
    """Two spoken systems and one silent one, each replying to all seven recorded deliveries."""
    import_layout(echomind_files(), users["admin"])
    systems = [SystemFactory.create(name=name) for name in SYSTEMS]
    for system in systems:
        _answer_every_delivery(system, with_audio=True)
    _answer_every_delivery(SystemFactory.create(name="SecretSilent"), with_audio=False)
    return systems


def _spec(systems: list[System], evaluators: list[User], **overrides: object) -> StudySpec:
    fields: dict[str, object] = {
        "name": "EchoMind replies MOS",
        "instructions": "Listen, then rate.",
        "systems": systems,
        "evaluators": evaluators,
        "items_per_system": 4,
        "ratings_per_output": len(evaluators),
        "dimensions": [NATURALNESS, PROSODY],
        "training_count": 1,
        "trap_count": 1,
        "seed": 28,
        **overrides,
    }
    return StudySpec(**fields)  # type: ignore[arg-type]


def test_a_study_is_created_from_the_systems_spoken_replies_to_deliveries(
    replies: list[System], users: dict[str, User]
) -> None:
    study = create_reply_study(_spec(replies, [users["evaluator"]]), "none", users["admin"])

    rated = list(study.stimuli.filter(kind=StudyStimulus.Kind.RATED).select_related("item", "system"))
    # four deliveries, the same four for both systems; each stimulus is that system's reply to it
    assert len(rated) == 8 and len({stimulus.item_id for stimulus in rated}) == 4
    for stimulus in rated:
        reply = Reply.objects.get(system=stimulus.system, delivery__item=stimulus.item, prompt="none")
        assert stimulus.output is None and stimulus.response_text == reply.text
        # frozen: a clean copy under a random key, not the reply's own file
        assert stimulus.audio_key.startswith("audio/stimulus/") and stimulus.audio_key != reply.audio_key
    assert {stimulus.system.name for stimulus in rated if stimulus.system} == set(SYSTEMS)
    assert study.benchmark_version == "echomind-replies:none"
    kinds = set(study.stimuli.values_list("kind", flat=True))
    assert kinds == {StudyStimulus.Kind.RATED, StudyStimulus.Kind.TRAINING, StudyStimulus.Kind.TRAP}


def test_a_silent_system_or_too_many_deliveries_is_refused(
    replies: list[System], users: dict[str, User]
) -> None:
    silent = System.objects.get(name="SecretSilent")
    with pytest.raises(StudyDesignError, match="only 0 items"):
        create_reply_study(_spec([*replies, silent], [users["evaluator"]]), "none", users["admin"])
    with pytest.raises(StudyDesignError, match="8 items per system were asked for, but only 7"):
        create_reply_study(_spec(replies, [users["evaluator"]], items_per_system=8), "none", users["admin"])
    assert not Study.objects.exists()


def test_an_admin_creates_the_study_evaluators_rate_blind_and_the_results_name_the_systems(
    replies: list[System],
    users: dict[str, User],
    make_user: Callable[..., User],
    client_for: Callable[[str], Client],
) -> None:
    # given the study page, which offers the spoken systems only
    admin = client_for("admin")
    page = admin.get("/echomind/studies/new/").content.decode()
    assert all(name in page for name in SYSTEMS) and "SecretSilent" not in page

    # when the admin creates a MOS study over both systems' replies
    rater = users["evaluator"]
    form = {
        "name": "Replies MOS", "title_for_raters": "Listening study", "instructions": "Listen, then rate.",
        "systems": [system.pk for system in replies], "prompt": "none", "items_per_system": 3,
        "ratings_per_output": 1, "dimensions": [NATURALNESS], "evaluators": [rater.pk],
        "training_count": 1, "trap_count": 1, "trap_score": 2, "allowed_check_failures": 0, "seed": 7,
    }  # fmt: skip
    response = admin.post("/echomind/studies/new/", form)
    study = Study.objects.get(name="Replies MOS")
    assert response.status_code == 302 and response["Location"] == reverse(
        "evaluation:study_results", args=[study.pk]
    )

    # then the evaluator rates every sample, and nothing they receive names a system
    client = client_for("evaluator")
    received = []
    while (assignment := StudyAssignment.objects.next_for(study, rater)) is not None:
        page = client.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
        received.append(page)
        assert "The user says" in page and len(AUDIO_SRC.findall(page)) == 2  # the delivery, the reply
        StudyAssignment.objects.filter(pk=assignment.pk).update(
            presented_at=timezone.now() - timedelta(seconds=60)
        )
        play_links(client, rater, AUDIO_SRC.findall(page))  # the page's players fetch their audio
        client.post(reverse("evaluation:assignment_played", args=[assignment.public_id]))
        client.post(
            reverse("evaluation:submit_assignment", args=[assignment.public_id]),
            {f"score_{NATURALNESS}": "4"},
        )
    everything = "\n".join(received).lower()
    forbidden = [*SYSTEMS, *(system.anonymous_code for system in replies), "Replies MOS"]
    forbidden += list(Reply.objects.exclude(audio_key="").values_list("audio_key", flat=True))
    assert [text for text in forbidden if text.lower() in everything] == []
    assert "hears target" not in everything  # the reply's words: not shown in an audio-only study

    # and the admin's results page reports each system's MOS
    results = admin.get(reverse("evaluation:study_results", args=[study.pk])).content.decode()
    for name in SYSTEMS:
        assert f'data-system="{name}"' in results
    assert "4.00" in results


@pytest.mark.parametrize("name", ["actor", "reviewer", "annotator", "lead", "evaluator", "norole"])
def test_only_admins_design_reply_studies(
    replies: list[System], users: dict[str, User], client_for: Callable[[str], Client], name: str
) -> None:
    client = client_for(name)
    assert client.get("/echomind/studies/new/").status_code == 403
    assert client.post("/echomind/studies/new/", {"name": "x"}).status_code == 403
    assert not Study.objects.exists()


def test_the_rater_role_is_checked_as_for_any_study(
    replies: list[System], users: dict[str, User], make_user: Callable[..., User]
) -> None:
    with pytest.raises(StudyDesignError, match="not evaluators"):
        create_reply_study(_spec(replies, [make_user(Role.REVIEWER)]), "none", users["admin"])


def test_a_re_import_archives_the_replies_it_replaces_and_keeps_their_audio(
    replies: list[System], users: dict[str, User]
) -> None:
    from evaluation.echomind import reports
    from webapp.storage import read_media

    system = replies[0]
    delivery = Delivery.objects.order_by("pk").first()
    assert delivery is not None
    earlier = Reply.objects.in_use().get(system=system, delivery=delivery, prompt="none")
    row = {"delivery": delivery.audio_name(), "prompt": "none", "response": "Again.", "scores": {"c1": 5}}
    report = import_answers(system, json.dumps(row).encode(), actor=users["admin"])
    assert not report.problems

    earlier.refresh_from_db()
    assert earlier.is_archived and earlier.archive_reason == "replaced by a re-import"
    assert earlier.archived_by == users["admin"]
    assert read_media(earlier.audio_key)  # the replaced reply's audio is kept
    mine = Reply.objects.filter(system=system, delivery=delivery, prompt="none")
    assert (mine.count(), mine.in_use().count()) == (2, 1)
    assert mine.in_use().get().text == "Again."
    # Scores read the reply in use only: c1 of this delivery is the new 5, once.
    c1 = [
        s.value
        for s in reports.delivery_scores()
        if (s.system, s.metric, s.prompt, s.delivery) == (system.name, "c1", "none", delivery.role)
        and s.case_id == delivery.delivery_set.case_id
    ]
    assert c1 == [5.0]
    # The judge writes no score onto the archived reply.
    assert Reply.objects.add_scores(earlier.pk, {"ves": 4.0}) is False
