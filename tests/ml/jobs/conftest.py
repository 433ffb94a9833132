"""Fixtures for the EchoChat job tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    # Tiny models gain nothing from intra-op threads, and on a shared machine extra threads spin.
    torch.set_num_threads(1)


@pytest.fixture
def ml_storage(settings: Any, tmp_path: Path, media_root: Path) -> Path:
    """Keep media and checkpoints under the test's own folder; return the checkpoint folder."""
    settings.CHECKPOINT_DIR = tmp_path / "checkpoints"
    # The heartbeat thread writes from its own connection, which SQLite locks out while the test's
    # transaction is open; heartbeats are not what these tests are about.
    settings.JOB_HEARTBEAT_SECONDS = 3600
    settings.ECHOCHAT_BASE_MODEL = ""
    return tmp_path / "checkpoints"
