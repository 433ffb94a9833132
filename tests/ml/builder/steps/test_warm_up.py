"""A builder worker loads what the audio stages need once, before its first sample."""

from __future__ import annotations

import sys
import weakref

from celery.signals import worker_init

from ml.builder import runner
from ml.builder.steps import audio_steps


def test_warming_up_loads_scipy_and_measures_a_reading() -> None:
    assert audio_steps.warm_up() >= 0.0
    assert {"scipy.signal", "scipy.stats"} <= set(sys.modules)


def test_a_celery_worker_warms_up_before_its_pool_forks(monkeypatch) -> None:
    calls: list[bool] = []

    def warm_up(*, models: bool = True) -> float:
        calls.append(models)
        return 0.0

    monkeypatch.setattr(audio_steps, "warm_up", warm_up)
    connected = [ref() if isinstance(ref, weakref.ReferenceType) else ref for _, ref in worker_init.receivers]
    assert runner._warm_up_worker in connected
    runner._warm_up_worker(sender=None)
    assert calls == [False]  # the imports only: no model session made before the fork
