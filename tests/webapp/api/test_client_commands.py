"""The client's other commands against a live server: gold export, refusals, a JSONL upload."""

from __future__ import annotations

import json

import pytest

from tests.evaluation.judging_support import BenchmarkItemFactory, echochat_text, jsonl
from webapp.api.tokens import create_token
from webapp.client.__main__ import run

pytestmark = pytest.mark.usefixtures("media_root")


@pytest.fixture
def common(live_server, users) -> list[str]:
    return ["--url", live_server.url, "--token", create_token(users["admin"], "cli").secret, "--quiet"]


def test_export_gold_writes_the_splits_rows(common, tmp_path) -> None:
    BenchmarkItemFactory.create(external_id="EE-1", split="train")
    BenchmarkItemFactory.create(external_id="EE-2", split="test")
    target = tmp_path / "train.jsonl"
    assert run([*common, "export-gold", "--split", "train", "-o", str(target)]) == 0
    assert [json.loads(line)["id"] for line in target.read_text().splitlines()] == ["EE-1"]


def test_a_refused_upload_prints_every_problem_and_exits_1(common, tmp_path, capsys) -> None:
    BenchmarkItemFactory.create(external_id="EE-1")
    assert run([*common, "register-system", "Texty", "--text-only"]) == 0
    rows = tmp_path / "outputs.jsonl"
    rows.write_bytes(
        jsonl({"item_id": "EE-1", "output": echochat_text()}, {"item_id": "EE-9", "output": "x"})
    )
    assert run([*common, "submit-outputs", "--system", "Texty", str(rows)]) == 1
    assert "line 2 (EE-9): unknown item" in capsys.readouterr().err
    rows.write_bytes(jsonl({"item_id": "EE-1", "output": echochat_text()}))
    assert run([*common, "submit-outputs", "--system", "Texty", str(rows)]) == 0


def test_a_bad_token_or_an_unknown_system_exits_1_with_the_reason(common, live_server, capsys) -> None:
    assert (
        run(["--url", live_server.url, "--token", "es_nope", "--quiet", "leaderboard", "--judge", "J"]) == 1
    )
    assert "unknown or revoked" in capsys.readouterr().err
    assert run([*common, "judge", "--system", "Nobody", "--judge", "J"]) == 1
    assert "No system is called 'Nobody'" in capsys.readouterr().err
