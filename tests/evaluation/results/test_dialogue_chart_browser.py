"""The dialogue leaderboard's score-by-turn chart drawn by real Chromium under the site's policy."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.urls import reverse

from tests.evaluation.results.dialogue_hand_computed import store_dialogues
from tests.factories import JudgeConfigFactory
from tests.support.browser import log_in
from webapp.models import User

pytestmark = [pytest.mark.browser]


def test_the_turn_chart_draws_one_line_per_system_without_policy_violations(
    open_browser_page: Callable[..., AbstractContextManager[Any]], live_server: Any, users: dict[str, User]
) -> None:
    judge = JudgeConfigFactory.create(name="judge")
    store_dialogues(judge)
    problems: list[str] = []
    with open_browser_page(bypass_csp=False) as page:
        page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
        page.on(
            "console",
            lambda message: (
                problems.append(message.text) if "Content Security Policy" in message.text else None
            ),
        )
        log_in(page, live_server, "admin")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        page.goto(f"{live_server.url}{reverse('evaluation:leaderboard')}?set=dialogues&judge={judge.pk}")
        page.wait_for_load_state("networkidle")
        chart = page.evaluate(
            """() => {
                const chart = Chart.getChart(document.getElementById("turn-chart-canvas"));
                return {type: chart.config.type, labels: chart.data.labels,
                        lines: chart.data.datasets.map((set) => [set.label, set.data.map((v) => Math.round(v * 100))]),
                        notDrawn: document.querySelector("[data-testid=not-drawn]").textContent};
            }"""
        )
    assert problems == []
    assert chart == {
        "type": "line",
        "labels": ["Turn 1", "Turn 2", "Turn 3"],
        # B's audio was not judged: no turn has an overall score, so it draws no line and is named
        "lines": [["A", [833, 700, 667]]],
        "notDrawn": "No line for B: no turn has an overall score (audio not judged).",
    }
