"""The snapping rule of static/js/word_ruler.js, run in Node: an edge near a word boundary lands on it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail

SCRIPT = Path(__file__).resolve().parents[3] / "static" / "js" / "word_ruler.js"
NODE = shutil.which("node")


@pytest.fixture(autouse=True)
def _node() -> None:
    if NODE is None:
        skip_or_fail("Node.js runs the studio's JavaScript rules here")


def snapped(seconds: float, boundaries: list[float], tolerance: float) -> float:
    program = (
        f"require({json.dumps(str(SCRIPT))});"
        f"process.stdout.write(JSON.stringify(globalThis.EchoWordRuler.snap({seconds}, {boundaries}, {tolerance})));"
    )
    assert NODE is not None
    result = subprocess.run([NODE, "-e", program], capture_output=True, text=True, timeout=30, check=True)
    return float(json.loads(result.stdout))


def test_an_edge_within_the_tolerance_lands_on_the_nearest_boundary() -> None:
    boundaries = [0.05, 0.3, 0.71, 1.2]

    assert snapped(0.33, boundaries, 0.05) == 0.3
    assert snapped(0.68, boundaries, 0.05) == 0.71
    # Between two close boundaries, the nearer wins.
    assert snapped(0.5, [0.45, 0.52], 0.1) == 0.52


def test_an_edge_further_away_or_without_words_stays_where_it_was_put() -> None:
    assert snapped(0.5, [0.3, 0.71], 0.05) == 0.5
    assert snapped(0.5, [], 0.05) == 0.5
