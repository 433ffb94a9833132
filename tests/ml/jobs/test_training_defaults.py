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
    ADVANTAGE_MODES,
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


def _values(source: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """Return the named values of a config, parsed arguments or a dict of initial values."""
    if isinstance(source, dict):
        return {name: source[name] for name in names}
    return {name: getattr(source, name) for name in names}


# The options both commands have (ml.cli.build_parser), then each command's own.
SHARED_OPTIONS = ("epochs", "max_steps", "learning_rate", "seed")
SFT_OPTIONS = (
    *SHARED_OPTIONS,
    "batch_size",
    "gradient_accumulation_steps",
    "lambda_aaa",
    "aaa_objective",
    "aaa_target_ratio",
    "aaa_layers",
)
RL_OPTIONS = (
    *SHARED_OPTIONS,
    "mode",
    "group_size",
    "kl_coef",
    "prompts_per_step",
    "max_new_tokens",
    "temperature",
)


@pytest.mark.parametrize(
    ("command", "config", "options", "lora"),
    [
        ("sft", SftConfig(), SFT_OPTIONS, None),
        ("rl", RlConfig(), RL_OPTIONS, RlConfig().lora),
    ],
)
def test_the_command_line_defaults_are_the_config_defaults_and_its_lora(
    command: str, config: SftConfig | RlConfig, options: tuple[str, ...], lora: LoraSettings | None
) -> None:
    args = _command_line(command)

    assert _values(args, options) == _values(config, options)
    assert _lora(args) == lora


@pytest.mark.django_db
def test_every_advantage_mode_is_offered_by_the_command_line_and_the_form_and_no_other(
    capsys: pytest.CaptureFixture[str],
) -> None:
    arguments = ["rl", "--data", "records.jsonl", "--model", "tiny", "--output", "out", "--mode"]
    form_modes = [value for value, _ in RlJobForm().fields["mode"].choices]  # type: ignore[attr-defined]

    assert ADVANTAGE_MODES == ("sdca", "grpo")
    assert form_modes == list(ADVANTAGE_MODES)
    assert [build_parser().parse_args([*arguments, mode]).mode for mode in ADVANTAGE_MODES] == form_modes
    with pytest.raises(SystemExit):
        build_parser().parse_args([*arguments, "ppo"])
    assert "invalid choice: 'ppo'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown mode 'ppo': expected 'sdca' or 'grpo'"):
        RlConfig(mode="ppo")  # type: ignore[arg-type]


def test_lora_at_another_rank_keeps_the_default_alpha_to_rank_ratio() -> None:
    assert LoraSettings.for_rank(LoraSettings().rank) == LoraSettings()
    assert (LoraSettings.for_rank(4).rank, LoraSettings.for_rank(4).alpha) == (4, 8)


@pytest.mark.django_db
def test_the_sft_form_starts_from_the_sft_config_training_every_weight() -> None:
    initial = _initial(SftJobForm())
    fields = (
        "epochs",
        "learning_rate",
        "batch_size",
        "gradient_accumulation_steps",
        "lambda_aaa",
        "aaa_objective",
        "aaa_target_ratio",
    )

    assert _values(initial, fields) == _values(SftConfig(), fields)
    # rank 0: no LoRA, the audio encoder trained with the adapter and the LLM (the paper's SFT)
    assert SftConfig().lora is None and initial["lora_rank"] == 0


def test_sft_lora_from_the_command_line_keeps_the_audio_encoder_trainable() -> None:
    sft = build_parser().parse_args(
        ["sft", "--data", "r.jsonl", "--model", "tiny", "--output", "o", "--lora-rank", "8"]
    )
    rl = build_parser().parse_args(["rl", "--data", "r.jsonl", "--model", "tiny", "--output", "o"])
    assert _lora(sft) == LoraSettings.for_rank(8, train_audio_encoder=True)
    lora = _lora(rl)
    assert lora is not None and not lora.train_audio_encoder


@pytest.mark.django_db
def test_the_rl_form_starts_from_the_rl_config() -> None:
    initial, rl = _initial(RlJobForm()), RlConfig()
    assert rl.lora is not None
    fields = (
        "mode",
        "group_size",
        "kl_coef",
        "learning_rate",
        "epochs",
        "prompts_per_step",
        "max_new_tokens",
        "temperature",
    )

    assert _values(initial, fields) == _values(rl, fields)
    assert (initial["lora_rank"], initial["tau"]) == (rl.lora.rank, rl.sdca.tau)


@pytest.mark.django_db
def test_the_reward_and_inference_forms_start_from_their_defaults() -> None:
    reward, fields = _initial(RewardTrainingJobForm()), ("epochs", "batch_size", "learning_rate")
    inference = _initial(InferenceJobForm())

    assert _values(reward, fields) == _values(RewardTrainingConfig(), fields)
    assert (inference["max_new_tokens"], inference["batch_size"]) == (
        INFERENCE_MAX_NEW_TOKENS,
        INFERENCE_BATCH_SIZE,
    )


def test_the_web_process_reads_the_defaults_without_loading_torch() -> None:
    # The pages, forms and task registry import ml.core.config; torch stays on the gpu workers.
    code = (
        "import sys, django; django.setup(); "
        "import ml.admin, ml.jobs.views, ml.jobs.tasks, ml.jobs.training.register; "
        "sys.exit('torch' in sys.modules)"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, check=False)
    assert completed.returncode == 0


@pytest.mark.django_db
def test_the_forms_offer_the_ablation_presets_and_put_the_choice_in_the_config() -> None:
    from ml.core.ablations import RL_ABLATIONS, SFT_ABLATIONS

    rl_choices = [value for value, _ in RlJobForm().fields["ablation"].choices]  # type: ignore[attr-defined]
    sft_choices = [value for value, _ in SftJobForm().fields["ablation"].choices]  # type: ignore[attr-defined]
    assert (rl_choices, sft_choices) == (list(RL_ABLATIONS), list(SFT_ABLATIONS))
    assert _initial(RlJobForm())["ablation"] == _initial(SftJobForm())["ablation"] == "none"
