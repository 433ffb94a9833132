"""Fixtures for the learning benches: the synthetic prosody task at its smallest size."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ml.core.synthetic.prosody import ProsodyTask, build_task


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    # Tiny models gain nothing from intra-op threads on a shared two-core machine.
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def small_task(tmp_path_factory: pytest.TempPathFactory) -> ProsodyTask:
    """One take per speaker and emotion: 24 training and 12 held-out utterances."""
    cache: Path = tmp_path_factory.mktemp("synthetic_prosody")
    return build_task(takes_train=1, takes_test=1, cache_dir=cache)
