"""Fixtures of the builder tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def queued_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs stay queued for `support.run_queued_jobs` instead of going to the broker."""
    monkeypatch.setattr("webapp.jobs.enqueue", lambda job: None)
