"""bench/gpu_smoke.py: refuses to pretend without CUDA; its steps pass on the CPU."""

from __future__ import annotations

import pytest
import torch

from bench import gpu_smoke


def test_without_cuda_it_says_so_and_exits_non_zero(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a GPU machine checks it too
    assert gpu_smoke.main([]) == 2
    assert "no CUDA device" in capsys.readouterr().out


@pytest.mark.slow
def test_every_step_passes_on_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    torch.set_num_threads(1)

    assert gpu_smoke.main(["--device", "cpu"]) == 0

    out = capsys.readouterr().out
    for step in ("sft_aaa", "rl_sdca", "reward", "inference"):
        assert f"PASS {step}" in out
    assert out.strip().endswith("gpu_smoke=pass")
