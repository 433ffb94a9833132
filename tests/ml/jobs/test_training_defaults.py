"""The command line and the job forms start from the config dataclasses' defaults, never their own."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any

import pytest

from ml.cli import _lora, build_parser
from ml.core.config import (
    INFERENCE_BATCH_SIZE,
    INFERENCE_MAX_NEW_TOKENS,
    LoraSettings,
    RewardTrainingConfig,
    RlConfig,
    SftConfig,
)
from ml.jobs.forms import InferenceJobForm, RewardTrainingJobForm, RlJobForm, SftJobForm
from tests.conftest import ROOT


def _command_line(command: str) -> argparse.Namespace:
    return build_parser().parse_args(
        [command, "--data", "records.jsonl", "--model", "tiny", "--output", "out"]
    )


def _initial(form: Any) -> dict[str, Any]:
    return {name: field.initial for name, field in form.fields.items()}


def test_the_sft_command_line_defaults_are_the_sft_config_and_default_lora() -> None:
    args, sft = _command_line("sft"), SftConfig()

    assert (args.epochs, args.max_steps, args.learning_rate, args.seed) == (
        sft.epochs,
        sft.max_steps,
        sft.learning_rate,
        sft.seed,
    )
    assert (args.batch_size, args.gradient_accumulation_steps, args.lambda_aaa, args.aaa_layers) == (
        sft.batch_size,
        sft.gradient_accumulation_steps,
        sft.lambda_aaa,
        sft.aaa_layers,
    )
    assert _lora(args) == LoraSettings()


def test_the_rl_command_line_defaults_are_the_rl_config() -> None:
    args, rl = _command_line("rl"), RlConfig()

    assert (args.mode, args.group_size, args.kl_coef, args.learning_rate) == (
        rl.mode,
        rl.group_size,
        rl.kl_coef,
        rl.learning_rate,
    )
    assert (args.epochs, args.max_steps, args.prompts_per_step, args.seed) == (
        rl.epochs,
        rl.max_steps,
        rl.prompts_per_step,
        rl.seed,
    )
    assert (args.max_new_tokens, args.temperature) == (rl.max_new_tokens, rl.temperature)
    assert _lora(args) == rl.lora


def test_lora_at_another_rank_keeps_the_default_alpha_to_rank_ratio() -> None:
    assert LoraSettings.for_rank(LoraSettings().rank) == LoraSettings()
    assert (LoraSettings.for_rank(4).rank, LoraSettings.for_rank(4).alpha) == (4, 8)


@pytest.mark.django_db
def test_the_sft_form_starts_from_the_sft_config_and_default_lora() -> None:
    initial, sft = _initial(SftJobForm()), SftConfig()

    assert {name: initial[name] for name in ("epochs", "learning_rate", "batch_size")} == {
        "epochs": sft.epochs,
        "learning_rate": sft.learning_rate,
        "batch_size": sft.batch_size,
    }
    assert (initial["gradient_accumulation_steps"], initial["lambda_aaa"]) == (
        sft.gradient_accumulation_steps,
        sft.lambda_aaa,
    )
    assert initial["lora_rank"] == LoraSettings().rank


@pytest.mark.django_db
def test_the_rl_form_starts_from_the_rl_config() -> None:
    initial, rl = _initial(RlJobForm()), RlConfig()
    assert rl.lora is not None

    assert {
        name: initial[name]
        for name in ("mode", "group_size", "kl_coef", "learning_rate", "epochs", "prompts_per_step")
    } == {
        "mode": rl.mode,
        "group_size": rl.group_size,
        "kl_coef": rl.kl_coef,
        "learning_rate": rl.learning_rate,
        "epochs": rl.epochs,
        "prompts_per_step": rl.prompts_per_step,
    }
    assert (initial["max_new_tokens"], initial["temperature"]) == (rl.max_new_tokens, rl.temperature)
    assert (initial["lora_rank"], initial["tau"]) == (rl.lora.rank, rl.sdca.tau)


@pytest.mark.django_db
def test_the_reward_and_inference_forms_start_from_their_defaults() -> None:
    reward, config = _initial(RewardTrainingJobForm()), RewardTrainingConfig()
    inference = _initial(InferenceJobForm())

    assert (reward["epochs"], reward["batch_size"], reward["learning_rate"]) == (
        config.epochs,
        config.batch_size,
        config.learning_rate,
    )
    assert (inference["max_new_tokens"], inference["batch_size"]) == (
        INFERENCE_MAX_NEW_TOKENS,
        INFERENCE_BATCH_SIZE,
    )


def test_the_web_process_reads_the_defaults_without_loading_torch() -> None:
    # The pages, forms and task registry import ml.core.config; torch stays on the gpu workers.
    code = (
        "import sys, django; django.setup(); "
        "import ml.admin, ml.jobs.views, ml.jobs.tasks, ml.jobs.train_and_register; "
        "sys.exit('torch' in sys.modules)"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, check=False)
    assert completed.returncode == 0
