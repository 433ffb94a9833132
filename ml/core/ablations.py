"""The paper's ablations as named presets (section 5.3, Tables 6 and 8), for the job forms and ``ml.cli``.

A preset is a small change to a training config, recorded in the config itself (``ablation``), so
it travels into ``Job.parameters`` and the checkpoint's metadata.json with the settings it set:

- ``no_aaa``          SFT without Acoustic-Anchored Attention (lambda_AAA = 0): Table 6 "Baseline 1".
- ``no_gating``       RL with tau = 0, so every cascaded gate stays open: Table 8 "w/o gating".
- ``vanilla_grpo``    RL with one normalised R_total on every token: Table 8 "w/o SDCA", Table 6 V4.
- ``no_response_reward``  RL without the reward model's signal: w_resp = 0, the other weights
  rescaled to keep their 5 : 1 ratio (5/6, 1/6), and the response span credited by the format
  reward alone: Table 6 V2 "Cascaded(SDCA)+Form.".
- ``format_response_only``  RL without the cascaded reasoning reward: w_reas = 0, the response and
  format weights rescaled to keep their 4 : 1 ratio (0.8, 0.2), one normalised R_total on every
  token (vanilla GRPO: with no stage rewards there are no span signals, and the reasoning tokens
  still learn from the outcome as in a response-level RL): Table 6 V3 "Format+Resp.".

``none`` is the full method. Pure: no torch, no Django.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from ml.core.config import RlConfig, SdcaConfig, SftConfig

NO_ABLATION = "none"
SFT_ABLATIONS: dict[str, str] = {
    NO_ABLATION: "Full method (SFT with AAA)",
    "no_aaa": "Without AAA (lambda AAA = 0; Table 6 Baseline 1)",
}
RL_ABLATIONS: dict[str, str] = {
    NO_ABLATION: "Full method (SDCA, cascaded gating, response reward)",
    "no_gating": "Without gating (tau = 0; Table 8)",
    "vanilla_grpo": "Vanilla GRPO, no SDCA (Table 8, Table 6 V4)",
    "no_response_reward": "Without the response reward (Table 6 V2)",
    "format_response_only": "Format and response rewards only, no reasoning reward (Table 6 V3)",
}

ConfigType = TypeVar("ConfigType", SftConfig, RlConfig)


def with_ablation(config: ConfigType, name: str) -> ConfigType:
    """Return ``config`` with preset ``name`` applied and recorded; raise ValueError for an unknown one."""
    if isinstance(config, SftConfig):
        if name not in SFT_ABLATIONS:
            raise ValueError(f"unknown SFT ablation {name!r}: expected one of {', '.join(SFT_ABLATIONS)}")
        if name == "no_aaa":
            return replace(config, lambda_aaa=0.0, ablation=name)
        return replace(config, ablation=name)
    if name not in RL_ABLATIONS:
        raise ValueError(f"unknown RL ablation {name!r}: expected one of {', '.join(RL_ABLATIONS)}")
    if name == "no_gating":
        return replace(config, sdca=replace(config.sdca, tau=0.0), ablation=name)
    if name == "vanilla_grpo":
        return replace(config, mode="grpo", ablation=name)
    if name == "no_response_reward":
        kept = config.sdca.reasoning_weight + config.sdca.format_weight
        sdca: SdcaConfig = replace(
            config.sdca,
            reasoning_weight=config.sdca.reasoning_weight / kept,
            response_weight=0.0,
            format_weight=config.sdca.format_weight / kept,
            response_span_response_weight=0.0,
            response_span_format_weight=1.0,
        )
        return replace(config, sdca=sdca, ablation=name)
    if name == "format_response_only":
        kept = config.sdca.response_weight + config.sdca.format_weight
        sdca = replace(
            config.sdca,
            reasoning_weight=0.0,
            response_weight=config.sdca.response_weight / kept,
            format_weight=config.sdca.format_weight / kept,
        )
        return replace(config, mode="grpo", sdca=sdca, ablation=name)
    return replace(config, ablation=name)
