"""The SFT start form offers a split that has ready items, and a refused start says why once."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from ml.core.ablations import NO_ABLATION
from ml.jobs.forms import SftJobForm
from tests.ml.jobs.support import TrainingItemFactory
from webapp.lib import vocabulary
from webapp.models import Job

pytestmark = pytest.mark.usefixtures("ml_storage")


def test_sft_defaults_to_train_when_train_has_ready_items(db: None) -> None:
    TrainingItemFactory.create(split=vocabulary.TRAIN)
    TrainingItemFactory.create(split=vocabulary.DEV)

    assert SftJobForm().fields["splits"].initial == [vocabulary.TRAIN]


def test_sft_falls_back_to_dev_but_never_to_test(db: None) -> None:
    TrainingItemFactory.create(split=vocabulary.TEST)
    assert SftJobForm().fields["splits"].initial == [vocabulary.TRAIN]

    TrainingItemFactory.create(split=vocabulary.DEV)
    assert SftJobForm().fields["splits"].initial == [vocabulary.DEV]


def test_a_refused_start_shows_its_reason_once_and_starts_nothing(
    client_for: Callable[[str], Client],
) -> None:
    TrainingItemFactory.create(split=vocabulary.TEST)
    page = reverse("ml:start_job", args=["sft_aaa"])

    response = client_for("admin").post(
        page,
        {
            "start_from": "tiny",
            "splits": [vocabulary.TRAIN],
            "epochs": 1,
            "learning_rate": 1e-4,
            "batch_size": 1,
            "gradient_accumulation_steps": 1,
            "lambda_aaa": 0.1,
            "lora_rank": 4,
            "device": "cpu",
            "ablation": NO_ABLATION,
        },
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert html.count('class="errorlist nonfield"') == 1
    assert 'data-testid="form-errors"' in html
    assert not Job.objects.exists()
