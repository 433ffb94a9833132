"""Fixtures for the EchoChat model tests: tiny random models of the real classes."""

from __future__ import annotations

import pytest
import torch

from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import build_tiny_speech_lm


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    # Tiny models gain nothing from intra-op threads, and on a shared two-core machine extra
    # threads spin while waiting for each other.
    torch.set_num_threads(1)


@pytest.fixture
def tiny_qwen2_audio() -> SpeechLM:
    return build_tiny_speech_lm("qwen2_audio", seed=0)


@pytest.fixture
def tiny_omni_thinker() -> SpeechLM:
    return build_tiny_speech_lm("qwen2_5_omni_thinker", seed=0)
