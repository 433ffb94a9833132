"""SFT under ``torchrun`` (two Gloo processes on the CPU) is the one-process run on the same global batch."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ml.core.runtime import Ranks
from ml.core.speech.tiny import build_tiny_speech_lm
from tests.conftest import ROOT
from tests.ml.core.distributed_sft import train

pytestmark = pytest.mark.slow


def test_two_processes_train_as_one_on_the_same_global_batch(tmp_path: Path) -> None:
    # given the same records, seed and global batch, trained by one process and by two
    output = tmp_path / "two.pt"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    command += ["-m", "tests.ml.core.distributed_sft", str(output)]
    completed = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    two = torch.load(output, weights_only=False)
    one = train(Ranks())

    # then every logged metric is the same: the AAA target from both ranks' first examples, and
    # the loss, CE, L_AAA and rho over the global batch (step 2 has one example: one rank has none)
    assert len(one["history"]) == len(two["history"]) == 3
    for alone, together in zip(one["history"], two["history"], strict=True):
        assert set(alone) == set(together)
        for name, value in alone.items():
            assert math.isfinite(value), name
            assert together[name] == pytest.approx(value, rel=1e-5, abs=1e-7), name
    # and the weights end the same, after three clipped steps that moved them
    start = dict(build_tiny_speech_lm("qwen2_audio", seed=0).model.named_parameters())
    assert one["weights"].keys() == two["weights"].keys()
    for name, weight in one["weights"].items():
        torch.testing.assert_close(two["weights"][name], weight, rtol=1e-5, atol=1e-6, msg=name)
    assert any(not torch.equal(weight, start[name]) for name, weight in one["weights"].items())
