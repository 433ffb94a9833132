"""Journey (4): the leaderboard with and without judged audio shows no figure on a scale its header
does not name, on the page, in CSV and LaTeX (page and API), in the API's JSON and in the client.

Response Avg.'s header says Content + Audio, out of 10. Computed by hand, two items:
  Omni (speech out): content 4, 4 -> 4.00; audio 4, 5 -> 4.50; response 8.50;
      perception 8, 6 -> 7.00; reasoning 7, 7 -> 7.00; All (7 + 7 + 8.5) / 3 = 7.50
  Texty (text out, audio never judged): content 3, 5 -> 4.00; Audio, Response and All "-"
The judge that did not attach audio stored the same scores without any audio score: every row's
Audio, Response and All are "-" there, Content still 4.00 on its own 1-5 scale.
"""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from webapp.api.tokens import create_token
from webapp.client.__main__ import run

pytestmark = pytest.mark.usefixtures("media_root")

KEYS = ("response_content", "response_audio", "response_avg", "all_avg")
ITEMS = {"i1": "implicit", "i2": "audio-dominant"}
# system -> stage -> (score on i1, score on i2)
SCORES = {
    "Omni": {"perception": (8, 6), "reasoning": (7, 7), "response_content": (4, 4), "response_audio": (4, 5)},
    "Texty": {"perception": (6, 6), "reasoning": (5, 5), "response_content": (3, 5)},
}
WITH_AUDIO = {"Omni": ("4.00", "4.50", "8.50", "7.50"), "Texty": ("4.00", "-", "-", "-")}
WITHOUT_AUDIO = {"Omni": ("4.00", "-", "-", "-"), "Texty": ("4.00", "-", "-", "-")}

Figures = dict[str, tuple[str, ...]]


@pytest.fixture
def judges(db: None) -> dict[str, JudgeConfig]:
    listening = JudgeConfigFactory.create(name="listening", attach_audio=True)
    reading = JudgeConfigFactory.create(name="reading", attach_audio=False)
    items = {
        key: BenchmarkItemFactory.create(external_id=key, scenario=value) for key, value in ITEMS.items()
    }
    for name, stages in SCORES.items():
        system = System.objects.create(name=name, text_only="response_audio" not in stages)
        for index, item in enumerate(items.values()):
            output = ModelOutputFactory.create(system=system, item=item, response_audio_key="")
            for stage, scores in stages.items():
                JudgementFactory.create(
                    output=output, stage=stage, judge_config=listening, score=scores[index]
                )
                if stage != "response_audio":  # this judge never heard the audio
                    JudgementFactory.create(
                        output=output, stage=stage, judge_config=reading, score=scores[index]
                    )
    return {"listening": listening, "reading": reading}


def _page(html: str) -> Figures:
    figures = {}
    for system, row in re.findall(r'<tr data-system="([^"]+)">(.*?)</tr>', html, re.S):
        cells = [
            re.sub(r"<span.*?</span>", "", cell)
            for cell in re.findall(r'<td class="num[^>]*>(.*?)</td>', row)
        ]
        figures[system] = tuple(cells[7:11])  # Content, Audio, Response Avg., All Avg.
    return figures


def _csv(text: str) -> Figures:
    return {
        row["system"]: tuple(f"{float(row[key]):.2f}" if row[key] else "-" for key in KEYS)
        for row in csv.DictReader(io.StringIO(text))
    }


def _latex(text: str) -> Figures:
    figures = {}
    for line in text.splitlines():
        if line.startswith(("Omni &", "Texty &")):
            name, *cells = line.removesuffix(r" \\").split(" & ")
            plain = [
                re.sub(r"\\textbf\{(.*?)\}|\\underline\{(.*?)\}", r"\1\2", cell)
                .replace("$^{=}$", "")
                .replace(r"$^{\dagger}$", "")
                for cell in cells
            ]
            figures[name] = tuple(plain[7:11])
    return figures


def _api(board: dict) -> Figures:
    return {
        row["system"]: tuple(
            "-" if row["cells"][key]["value"] is None else f"{row['cells'][key]['value']:.2f}" for key in KEYS
        )
        for row in board["rows"]
    }


def _client_table(text: str) -> Figures:
    lines = text.splitlines()
    header = re.split(r"\s{2,}", lines[1].strip())
    at = [header.index(name) for name in ("Response Content", "Response Audio", "Response Avg.", "All Avg.")]
    figures = {}
    for line in lines[2 : lines.index("")]:  # Table 2; the objective audio table follows a blank line
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] in SCORES:
            # A cell reads "value[=][†] n/N": the figure is its first word.
            figures[cells[0]] = tuple(cells[index].split(" ")[0].rstrip("=†") for index in at)
    return figures


def _sums_hold(figures: Figures) -> None:
    """A Response figure is always Content + Audio, and only shown when both are."""
    for content, audio, response, overall in figures.values():
        if "-" in (content, audio):
            assert (response, overall) == ("-", "-")
        else:
            assert abs(float(response) - float(content) - float(audio)) <= 0.011


@pytest.mark.django_db(transaction=True)
def test_no_figure_is_on_a_scale_its_header_does_not_name(
    judges: dict[str, JudgeConfig], client_for, live_server, users, capsys
) -> None:
    admin = client_for("admin")
    token = create_token(users["admin"], "journey").secret
    common = ["--url", live_server.url, "--token", token, "--quiet"]
    for name, expected in (("listening", WITH_AUDIO), ("reading", WITHOUT_AUDIO)):
        judge = {"judge": judges[name].pk}
        page = admin.get(reverse("evaluation:leaderboard"), judge).content.decode()
        assert 'data-testid="content-only-note"' in page
        api = admin.get("/api/leaderboard/", judge).json()
        assert (api["judge"], api["judge_id"]) == (name, judges[name].pk)
        assert run([*common, "leaderboard", "--judge", name]) == 0
        printed = capsys.readouterr().out
        assert printed.startswith(f"echoeval-v1 judged by {name} (judge id {judges[name].pk})")
        assert printed.splitlines()[1].rstrip().endswith("Excluded")
        renderings = {
            "page": _page(page),
            "page csv": _csv(admin.get(reverse("evaluation:leaderboard_csv"), judge).content.decode()),
            "page latex": _latex(admin.get(reverse("evaluation:leaderboard_tex"), judge).content.decode()),
            "api": _api(api),
            "api csv": _csv(admin.get("/api/leaderboard/csv/", judge).content.decode()),
            "api latex": _latex(admin.get("/api/leaderboard/latex/", judge).content.decode()),
            "client": _client_table(printed),
        }
        for where, figures in renderings.items():
            assert figures == expected, (name, where)
            _sums_hold(figures)


def test_the_api_and_the_client_refuse_to_pick_a_judge(judges: dict[str, JudgeConfig], client_for) -> None:
    admin = client_for("admin")
    for path in (
        "/api/leaderboard/",
        "/api/leaderboard/csv/",
        "/api/leaderboard/latex/",
        "/api/error-propagation/",
    ):
        refused = admin.get(path)
        assert refused.status_code == 400, path
        assert refused.json()["problems"] == [
            "judge: Name the judge configuration (its id): results do not default to the newest judge here."
        ]
    exported = admin.get("/api/leaderboard/csv/", {"judge": judges["reading"].pk})
    assert exported["X-Judge"] == f"{judges['reading'].pk} reading"
    with pytest.raises(SystemExit):  # argparse: --judge is required
        run(["--url", "http://localhost:1", "--token", "x", "leaderboard"])
