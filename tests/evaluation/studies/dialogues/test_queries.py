"""The conversation page costs the same number of queries however many turns the dialogue has."""

from __future__ import annotations

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.evaluation.studies.dialogues.support import build_dialogue_world, make_dialogue_study
from webapp.roles import Role


def _page_queries(make_user, admin, turns: int) -> int:
    rater = make_user(Role.EVALUATOR)
    world = build_dialogue_world(
        make_user,
        n_systems=2,
        n_dialogues=2,
        turns=turns,
        prefix=f"Q{turns}",
        system_prefix=f"Q{turns}System",
    )
    study = make_dialogue_study(world, [rater], admin)
    client = Client()
    client.force_login(rater)
    url = reverse("evaluation:rate_study", args=[study.public_id])
    client.get(url)  # the first visit also records when the page was shown
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_the_conversation_page_does_not_query_per_turn(make_user, users):
    assert _page_queries(make_user, users["admin"], turns=2) == _page_queries(
        make_user, users["admin"], turns=5
    )
