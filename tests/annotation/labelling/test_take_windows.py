"""A long take's contours and word ruler load per visible window (issue 46): the workbench and the
adjudication page of a take over a minute carry neither, and ask a windowed endpoint for the part
in view; a short take keeps both on the page. The endpoints answer whoever may open the page, and
no one else."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.audio.prosody import DISPLAY_POINTS, display_points
from annotation.audio.stress import TimedWord
from annotation.audio.suggestions import WINDOW_POINTS, WINDOW_WORDS, WordTiming, take_window
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from tests.factories import UserFactory
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.usefixtures("media_root")

SECONDS = 600
STEP = 0.05  # 20 points per second, as the analysis keeps for a long take


def long_contours(seconds: int = SECONDS) -> dict[str, Any]:
    times = [round(STEP * i, 3) for i in range(int(seconds / STEP))]
    return {
        "pitch": {"times": times, "hz": [200.0 + (i % 50) for i in range(len(times))]},
        "intensity": {"times": times, "db": [60.0 + (i % 10) for i in range(len(times))]},
    }


def long_words(seconds: int = SECONDS) -> list[dict[str, Any]]:
    """A word every half second: "w0" at 0.0-0.4 s, "w1" at 0.5-0.9 s, ..."""
    return [
        {"text": f"w{i}", "start": round(0.5 * i, 2), "end": round(0.5 * i + 0.4, 2), "phones": 3}
        for i in range(seconds * 2)
    ]


def long_item(**overrides: Any) -> Item:
    return LabellingItemFactory.create(
        recording__duration_seconds=float(SECONDS),
        recording__contours=long_contours(),
        recording__qc={"speech": {"words": long_words(), "phones_per_second": 9.5}},
        **overrides,
    )


def workbench_of(item: Item, user: User) -> Annotation:
    (annotation,) = assign(item, user)
    return annotation


def window_url(annotation: Annotation, start: float, end: float) -> str:
    return reverse("annotation:workbench_window", args=[annotation.pk]) + f"?start={start}&end={end}"


# --- The window itself ----------------------------------------------------------------------


def test_a_window_holds_only_its_points_and_words() -> None:
    tracks = {
        "pitch": [[0.1 * i, 100.0 + i] for i in range(100)],
        "energy": [[0.1 * i, 50.0] for i in range(100)],
    }
    words = [TimedWord(f"w{i}", float(i), i + 0.8, 2) for i in range(10)]
    timing = WordTiming(words=words, phones_per_second=None, stress=[])

    window = take_window(tracks, timing, 2.0, 4.0)

    assert [round(t, 1) for t, _ in window["pitch"]] == [round(2.0 + 0.1 * i, 1) for i in range(21)]
    assert all(2.0 <= t <= 4.0 for t, _ in window["energy"])
    # A word overlapping an edge counts (w1 ends at 1.8 s, before the window: left out).
    assert [word["text"] for word in window["words"]] == ["w2", "w3", "w4"]
    assert window["words_total"] == 3 and (window["start"], window["end"]) == (2.0, 4.0)


def test_a_wide_window_is_averaged_down_and_its_words_counted_not_sent() -> None:
    tracks = {"pitch": [[0.01 * i, 200.0] for i in range(50_000)], "energy": []}
    words = [TimedWord("w", 0.5 * i, 0.5 * i + 0.4, 2) for i in range(1000)]

    window = take_window(tracks, WordTiming(words=words, phones_per_second=None, stress=[]), 0.0, 500.0)

    assert len(window["pitch"]) == WINDOW_POINTS and window["pitch"][0][1] == 200.0
    assert window["words"] == [] and window["words_total"] == 1000 > WINDOW_WORDS
    assert window["energy"] == []


def test_a_long_take_keeps_twenty_points_a_second_a_short_one_four_hundred() -> None:
    assert display_points(1.5) == display_points(20.0) == DISPLAY_POINTS
    assert display_points(600.0) == 12_000


# --- The pages ------------------------------------------------------------------------------


def _json_script(page: str, node_id: str) -> Any:
    found = re.search(rf'<script id="{node_id}" type="application/json">(.*?)</script>', page, re.S)
    assert found, node_id
    return json.loads(found[1])


def test_a_long_takes_workbench_carries_no_contours_and_no_words_but_their_window_url(
    users: dict[str, User],
) -> None:
    annotation = workbench_of(long_item(), users["annotator"])
    client = Client()
    client.force_login(users["annotator"])

    page = client.get(reverse("annotation:workbench", args=[annotation.pk])).content.decode()

    url = reverse("annotation:workbench_window", args=[annotation.pk])
    assert f'data-window-url="{url}"' in page
    assert _json_script(page, "contours-data") is None
    assert 'data-windowed="true"' in page and "<li data-start" not in page
    assert "Speaking rate: 9.5 phones/s" in page  # the rate is the whole take's, on the page


def test_a_short_takes_workbench_keeps_them_on_the_page(users: dict[str, User]) -> None:
    annotation = workbench_of(LabellingItemFactory.create(), users["annotator"])
    client = Client()
    client.force_login(users["annotator"])

    page = client.get(reverse("annotation:workbench", args=[annotation.pk])).content.decode()

    assert "data-window-url" not in page
    assert len(_json_script(page, "contours-data")["pitch"]) > 10


def test_the_adjudication_page_draws_from_the_peaks_and_windows_a_long_take(
    users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    item = long_item()
    submitted(workbench_of(item, users["annotator"]))

    page = client_for("lead").get(reverse("annotation:adjudicate", args=[item.pk])).content.decode()

    peaks = _json_script(page, "waveform-peaks")
    assert peaks is not None and peaks["data"]  # drawn at once, as the workbench is
    assert f'data-window-url="{reverse("annotation:adjudicate_window", args=[item.pk])}"' in page
    assert _json_script(page, "contours-data") is None


# --- The workbench's window endpoint: the annotation's own annotator only ---------------------


def test_the_annotator_gets_the_windows_points_and_words(users: dict[str, User]) -> None:
    annotation = workbench_of(long_item(), users["annotator"])
    client = Client()
    client.force_login(users["annotator"])

    response = client.get(window_url(annotation, 100, 110))

    assert response.status_code == 200
    window = response.json()
    assert window["pitch"] and all(100 <= t <= 110 for t, _ in window["pitch"])
    assert len(window["pitch"]) == 201  # every stored point: 20 a second
    assert [w["text"] for w in window["words"]] == [f"w{i}" for i in range(200, 221)]
    assert all(w["end"] >= 100 and w["start"] <= 110 for w in window["words"])


def test_the_whole_long_take_is_one_window_of_averaged_points_without_words(users: dict[str, User]) -> None:
    annotation = workbench_of(long_item(), users["annotator"])
    client = Client()
    client.force_login(users["annotator"])

    window = client.get(window_url(annotation, -5, 10_000)).json()

    assert (window["start"], window["end"]) == (0.0, float(SECONDS))  # clamped to the take
    assert len(window["pitch"]) == WINDOW_POINTS
    assert window["words"] == [] and window["words_total"] == SECONDS * 2


@pytest.mark.parametrize("query", ["", "?start=1", "?start=a&end=2", "?start=5&end=2", "?start=nan&end=2"])
def test_a_window_without_a_span_is_refused(users: dict[str, User], query: str) -> None:
    annotation = workbench_of(long_item(), users["annotator"])
    client = Client()
    client.force_login(users["annotator"])

    response = client.get(reverse("annotation:workbench_window", args=[annotation.pk]) + query)

    assert response.status_code == 400 and "error" in response.json()


def test_no_one_else_gets_an_annotations_window(
    users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    annotation = workbench_of(long_item(), users["annotator"])
    url = window_url(annotation, 0, 10)
    other = UserFactory.create(role=Role.ANNOTATOR)
    other_client = Client()
    other_client.force_login(other)

    assert other_client.get(url).status_code == 404  # another annotator's: as the workbench
    assert client_for("actor").get(url).status_code == 403
    assert Client().get(url).status_code == 302  # log in first
    assert client_for("annotator").post(url).status_code == 405


# --- The adjudication page's window endpoint: whoever may open the page --------------------------


def test_the_lead_and_an_admin_get_the_items_window(
    users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    item = long_item()
    submitted(workbench_of(item, users["annotator"]))
    url = reverse("annotation:adjudicate_window", args=[item.pk]) + "?start=10&end=12"

    for name in ("lead", "admin"):
        response = client_for(name).get(url)
        assert response.status_code == 200
        assert [w["text"] for w in response.json()["words"]] == [f"w{i}" for i in range(20, 25)]


def test_a_lead_who_labelled_the_item_and_an_annotator_get_no_window(
    users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    item = long_item()
    submitted(workbench_of(item, users["annotator"]))
    assign(item, users["lead"])  # the lead labels it too: adjudication is another lead's
    url = reverse("annotation:adjudicate_window", args=[item.pk]) + "?start=10&end=12"

    refused = client_for("lead").get(url)
    assert refused.status_code == 403 and "words" not in refused.json()
    assert client_for("annotator").get(url).status_code == 403
    assert Client().get(url).status_code == 302


def test_the_take_page_of_a_long_take_carries_an_overview_of_its_contours(
    users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    take = long_item().recording
    assert take is not None

    page = client_for("admin").get(reverse("annotation:take_detail", args=[take.public_id])).content.decode()

    contours = _json_script(page, "take-contours")
    assert len(contours["pitch"]["times"]) == len(contours["intensity"]["db"]) == DISPLAY_POINTS
    assert contours["pitch"]["times"][0] < 1 and contours["pitch"]["times"][-1] > SECONDS - 1
