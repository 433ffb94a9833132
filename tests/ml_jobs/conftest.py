"""Fixtures for the EchoChat job tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    # Tiny models gain nothing from intra-op threads, and on a shared machine extra threads spin.
    torch.set_num_threads(1)
