"""The `echostudio` client against a live server and a real Celery worker: a lab's script registers a
system, uploads its outputs, judges them against a local judge, and reads the page's leaderboard."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from tests.evaluation.judging_support import BenchmarkItemFactory, echochat_text, jsonl, rubric_judge, zip_of
from tests.factories import tiny_wav
from tests.support.fake_chat_server import running_chat_server
from webapp.client.__main__ import run

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("media_root")]
ROOT = Path(__file__).resolve().parents[3]


def _token_from_account_page(client) -> str:
    page = client.post(reverse("api_tokens"), {"name": "training pipeline"}).content.decode()
    found = re.search(r'data-testid="token-secret">([^<]+)<', page)
    assert found, page
    return found.group(1)


def test_a_script_submits_judges_and_reads_the_pages_leaderboard(
    live_server, client_for, worker_factory, settings, tmp_path, capsys
) -> None:
    # given three benchmark items with gold, an outputs zip, a local judge and a worker
    for number, scenario in enumerate(("implicit", "modality-conflict", "emotion-shift")):
        BenchmarkItemFactory.create(external_id=f"EE-{number}", scenario=scenario)
    outputs = tmp_path / "outputs.zip"
    outputs.write_bytes(
        zip_of(
            {
                "outputs.jsonl": jsonl(
                    *({"item_id": f"EE-{n}", "output": echochat_text()} for n in range(3))
                ),
                **{f"EE-{n}.wav": tiny_wav(frequency=200 + 50 * n) for n in range(3)},
            }
        )
    )
    worker = worker_factory(ECHOSTUDIO_MEDIA_ROOT=settings.STORAGES["default"]["OPTIONS"]["location"])
    admin = client_for("admin")
    token = _token_from_account_page(admin)
    common = ["--url", live_server.url, "--token", token, "--quiet"]

    with running_chat_server(rubric_judge()) as judge:
        JudgeConfig.objects.create(
            name="local judge", base_url=judge.base_url, model="judge-model", attach_audio=True
        )

        # when the script registers, uploads and judges with --wait
        assert run([*common, "register-system", "Omni-X", "--category", "omni"]) == 0
        assert run([*common, "submit-outputs", "--system", "Omni-X", str(outputs)]) == 0
        assert '"created": 3' in capsys.readouterr().out
        assert run([*common, "judge", "--system", "Omni-X", "--judge", "local judge", "--wait"]) == 0, (
            worker.log_text()
        )
        assert '"status": "succeeded"' in capsys.readouterr().out
    assert len(judge.chat_requests) == 12

    # then the leaderboard it prints (through the installed entry point) is the page's
    printed = subprocess.run(
        [
            sys.executable,
            "-m",
            "webapp.client",
            *common,
            "leaderboard",
            "--judge",
            "local judge",
            "--format",
            "csv",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    page_csv = admin.get(reverse("evaluation:leaderboard_csv")).content.decode()
    assert list(csv.reader(io.StringIO(printed))) == list(csv.reader(io.StringIO(page_csv)))
    page_rows = admin.get(reverse("evaluation:leaderboard")).context["table_rows"]
    assert run([*common, "leaderboard", "--judge", "local judge", "--format", "json"]) == 0
    api_board = __import__("json").loads(capsys.readouterr().out)
    [(system, cells, excluded)] = page_rows
    [api_row] = api_board["rows"]
    assert api_row["system"] == system.name == "Omni-X"
    assert [api_row["cells"][key]["value"] for key in api_row["cells"]] == [cell.value for cell in cells]
    assert api_row["excluded"] == excluded
    assert round(api_row["cells"]["all_avg"]["value"], 2) == 8.22
    page_propagation = admin.get(reverse("evaluation:error_propagation")).context["rows"]
    judge_id = JudgeConfig.objects.get(name="local judge").pk
    assert api_board["judge_id"] == judge_id
    api_propagation = admin.get("/api/error-propagation/", {"judge": judge_id}).json()
    assert [row["p_reasoning_given_perception"] for row in api_propagation] == [
        figures.p_reasoning_given_perception for _, figures in page_propagation
    ]
