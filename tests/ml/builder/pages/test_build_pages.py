"""The build page: per-stage counts, top drop reasons, cost, progress of running stages, and the
spot-check acceptance per stage with its interval (table and chart data)."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from ml.builder.models import BuildStage, SpotCheck, StageStatus
from ml.builder.pages.queue import Decision, decide, draw_spot_checks
from tests.ml.builder.pages.spotcheck_builds import finished_build, taken
from webapp.jobs import start_job
from webapp.roles import Role


@pytest.fixture
def build(db):
    return finished_build(
        single=10,
        drops={
            "query_filter": ["non_triviality", "non_triviality", "self_harm_intent"],
            "consistency": ["not_confident", "not_confident", "inconsistent_emotion"],
        },
    )


def stage_row(html: str, stage: str) -> str:
    match = re.search(rf'<tr data-stage="{stage}">(.*?)</tr>', html, re.S)
    assert match, stage
    return match.group(1)


def cell(row: str, testid: str) -> str:
    match = re.search(rf'data-testid="{testid}">(.*?)</td>', row, re.S)
    assert match, testid
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(1))).strip()


def test_per_stage_counts_and_top_drop_reasons(build, client_for) -> None:
    html = client_for("admin").get(reverse("ml:builder:build", args=[build.pk])).content.decode()

    queries = stage_row(html, "queries")
    assert (cell(queries, "made"), cell(queries, "kept"), cell(queries, "dropped")) == ("16", "16", "0")
    query_filter = stage_row(html, "query_filter")
    assert (cell(query_filter, "made"), cell(query_filter, "kept"), cell(query_filter, "dropped")) == (
        "16",
        "13",
        "3",
    )
    assert cell(query_filter, "reasons") == "non_triviality: 2 self_harm_intent: 1"
    consistency = stage_row(html, "consistency")
    assert (cell(consistency, "made"), cell(consistency, "dropped")) == ("13", "3")
    assert cell(consistency, "reasons") == "not_confident: 2 inconsistent_emotion: 1"
    assert cell(stage_row(html, "response_audio"), "made") == "10"
    # cost: 16 samples reached the queries stage at 100 + 40 tokens each
    assert "1600 / 640" in queries
    assert 'data-testid="finished">10<' in html


def test_acceptance_per_stage_and_chart_after_spot_checks(build, client_for, make_user) -> None:
    # given 5 checked samples: 3 kept, 1 dropped for the consistency check, 1 fixed for perception
    draw_spot_checks(build, count=5)
    annotator = make_user(Role.ANNOTATOR)
    decisions = [
        Decision("keep"),
        Decision("keep"),
        Decision("keep"),
        Decision("drop", ("audio_wrong_emotion",)),
        Decision("fix", ("perception_wrong",), perception={"intensity": "high"}),
    ]
    for decision in decisions:
        decide(taken(annotator), annotator, decision)

    # when the admin opens the build page
    response = client_for("admin").get(reverse("ml:builder:build", args=[build.pk]))
    html = response.content.decode()

    # then consistency and perception each accepted 4 of 5, Wilson [0.3755, 0.9638] by hand:
    # center = (0.8 + 3.8415/10) / (1 + 3.8415/5) = 1.18415 / 1.76829 = 0.66966, half = 0.29412
    assert cell(stage_row(html, "consistency"), "acceptance") == "4 of 5 · 80% [0.38, 0.96]"
    assert cell(stage_row(html, "perception"), "acceptance") == "4 of 5 · 80% [0.38, 0.96]"
    assert cell(stage_row(html, "queries"), "acceptance") == "5 of 5 · 100% [0.57, 1.00]"
    assert cell(stage_row(html, "trajectories"), "acceptance") == "—"  # no dialogue turn checked
    assert 'data-testid="overall-acceptance">60%<' in html
    chart = response.context["chart"]
    labels = chart["labels"]
    consistency = labels.index("Emotion consistency")
    assert (chart["rate"][consistency], chart["low"][consistency], chart["high"][consistency]) == (
        80.0,
        37.6,
        96.4,
    )
    assert "Dialogue trajectories" not in labels
    embedded = re.search(r'id="acceptance-chart-data"[^>]*>(.*?)</script>', html, re.S)
    assert embedded and json.loads(embedded.group(1)) == chart


def test_a_running_stage_shows_its_job_progress(build, client_for, monkeypatch) -> None:
    monkeypatch.setattr("webapp.jobs.enqueue", lambda job: None)
    job = start_job("builder_stage", parameters={"build": build.pk, "stage": "response_audio", "shard": 0})
    BuildStage.objects.filter(build=build, stage="response_audio").update(status=StageStatus.RUNNING, job=job)
    html = client_for("admin").get(reverse("ml:builder:build", args=[build.pk])).content.decode()
    assert f'id="job-{job.pk}"' in html
    assert f'hx-get="{reverse("job_detail", args=[job.pk])}"' in html


def test_the_build_list_links_each_build_with_its_spot_check_progress(build, client_for, make_user) -> None:
    draw_spot_checks(build, count=2)
    annotator = make_user(Role.ANNOTATOR)
    decide(taken(annotator), annotator, Decision("keep"))
    html = client_for("admin").get(reverse("ml:builder:builds")).content.decode()
    assert reverse("ml:builder:build", args=[build.pk]) in html
    assert "1 of 2" in html


def test_drawing_from_the_page(build, client_for) -> None:
    response = client_for("admin").post(
        reverse("ml:builder:draw", args=[build.pk]), {"percent": "50"}, follow=True
    )
    assert SpotCheck.objects.filter(build=build).count() == 5
    assert "Sent 5 samples to the spot-check queue." in response.content.decode()


def test_drawing_needs_one_size(build, client_for) -> None:
    response = client_for("admin").post(
        reverse("ml:builder:draw", args=[build.pk]), {"percent": "50", "count": "2"}, follow=True
    )
    assert "not both" in response.content.decode()
    assert not SpotCheck.objects.exists()


def test_a_running_build_refreshes_its_stages_table(build, client_for) -> None:
    build.status = "running"
    build.save()
    admin = client_for("admin")
    page = admin.get(reverse("ml:builder:build", args=[build.pk])).content.decode()
    assert 'hx-trigger="every 5s"' in page
    partial = admin.get(reverse("ml:builder:build", args=[build.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<section class="card" id="stages"')
    assert "Spot-checks" not in partial
    assert 'data-stage="consistency"' in partial
