"""The command-line client prints the EchoMind leaderboard the API serves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaluation.echomind.answers import import_answers
from evaluation.echomind.transfer import import_layout
from tests.evaluation.echomind.fixture import echomind_files
from tests.factories import SystemFactory
from webapp.api.tokens import create_token
from webapp.client.__main__ import run
from webapp.models import User


def test_the_client_prints_the_echomind_leaderboard(
    live_server: Any, users: dict[str, User], media_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_layout(echomind_files(with_audio=False), users["admin"])
    answers = b'{"question_id": "u1", "answer": "The answer is: [B]"}\n{"question_id": "r1", "answer": "B"}\n'
    import_answers(SystemFactory.create(name="Parrot"), answers)
    common = ["--url", live_server.url, "--token", create_token(users["admin"], "cli").secret, "--quiet"]
    assert run([*common, "echomind-leaderboard"]) == 0
    header, row, note = capsys.readouterr().out.splitlines()
    assert header.split()[:2] == ["System", "Understanding"]
    # each figure with n/N: 1 of the 3 understanding and 1 of the 2 reasoning questions answered
    assert row.split()[:6] == ["Parrot", "100.0", "1/3", "0.0", "1/2", "0"]
    assert note.startswith("n/N: the rows behind a figure")
    assert run([*common, "echomind-leaderboard", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("Parrot,100.0,")
