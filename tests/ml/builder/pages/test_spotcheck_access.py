"""Who may use each spot-check and build page: annotators, leads and admins take spot-checks;
only admins see builds, draw samples and tighten filters; anonymous visitors log in first."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from ml.builder.models import SpotCheck
from ml.builder.pages.queue import draw_spot_checks
from tests.ml.builder.pages.spotcheck_builds import finished_build, taken

SPOT_CHECKERS = ("annotator", "lead", "admin")
OTHERS = ("actor", "reviewer", "evaluator", "norole")
EVERYONE = SPOT_CHECKERS + OTHERS


@pytest.fixture
def build(db):
    build = finished_build(single=6)
    draw_spot_checks(build, count=6)
    return build


def admin_pages(build) -> list[tuple[str, str, dict]]:
    return [
        ("get", reverse("ml:builder:builds"), {}),
        ("get", reverse("ml:builder:build", args=[build.pk]), {}),
        ("post", reverse("ml:builder:draw", args=[build.pk]), {"count": "1"}),
        (
            "post",
            reverse("ml:builder:tighten", args=[build.pk]),
            {"setting": "query_min_score", "value": "2"},
        ),
        ("post", reverse("ml:builder:export", args=[build.pk]), {}),
        ("post", reverse("ml:builder:resume", args=[build.pk]), {}),
    ]


@pytest.mark.parametrize("who", EVERYONE)
def test_build_pages_are_for_admins_only(build, client_for, who) -> None:
    for method, url, data in admin_pages(build):
        response = getattr(client_for(who), method)(url, data)
        if who == "admin":
            assert response.status_code in (200, 302), url
            if response.status_code == 302:
                assert response.url == reverse("ml:builder:build", args=[build.pk])
        else:
            assert response.status_code == 403, (who, url)


def test_anonymous_visitors_log_in_first(build) -> None:
    anonymous = Client()
    urls = [(m, u, d) for m, u, d in admin_pages(build)]
    urls += [
        ("get", reverse("ml:builder:spot_checks"), {}),
        ("post", reverse("ml:builder:spot_check_next"), {}),
    ]
    urls += [("get", reverse("ml:builder:spot_check", args=[SpotCheck.objects.order_by("id")[0].pk]), {})]
    for method, url, data in urls:
        response = getattr(anonymous, method)(url, data)
        assert response.status_code == 302 and response.url.startswith(reverse("login")), url


def test_drawing_and_tightening_only_by_post(build, client_for) -> None:
    admin = client_for("admin")
    assert admin.get(reverse("ml:builder:draw", args=[build.pk])).status_code == 405
    assert admin.get(reverse("ml:builder:tighten", args=[build.pk])).status_code == 405
    assert admin.get(reverse("ml:builder:resume", args=[build.pk])).status_code == 405
    assert client_for("annotator").get(reverse("ml:builder:spot_check_next")).status_code == 405


@pytest.mark.parametrize("who", EVERYONE)
def test_the_spot_check_queue_is_for_annotators_leads_and_admins(build, client_for, who) -> None:
    client = client_for(who)
    queue = client.get(reverse("ml:builder:spot_checks"))
    taken = client.post(reverse("ml:builder:spot_check_next"), {"build": build.pk})
    if who in SPOT_CHECKERS:
        assert queue.status_code == 200
        assert taken.status_code == 302
        check = SpotCheck.objects.get(annotator__username=who)
        assert taken.url == reverse("ml:builder:spot_check", args=[check.pk])
        assert client.get(taken.url).status_code == 200
    else:
        assert queue.status_code == 403 and taken.status_code == 403
        assert not SpotCheck.objects.filter(annotator__username=who).exists()


def test_a_check_is_only_its_annotators(build, client_for, users) -> None:
    check = taken(users["annotator"])
    url = reverse("ml:builder:spot_check", args=[check.pk])
    assert client_for("annotator").get(url).status_code == 200
    for other in ("lead", "admin"):
        assert client_for(other).get(url).status_code == 404
        assert client_for(other).post(url, {"verdict": "keep"}).status_code == 404
    assert client_for("evaluator").get(url).status_code == 403
    check.refresh_from_db()
    assert not check.is_submitted


def test_unknown_build_is_404(db, client_for) -> None:
    assert client_for("admin").get(reverse("ml:builder:build", args=[999999])).status_code == 404
