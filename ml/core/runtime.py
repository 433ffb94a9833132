"""Where and how a training or inference run executes: device, dtype, the starting model, ranks.

Shared by the gpu-queue jobs and the command line (``ml.cli``), so a run started from the web
app and one started with ``torchrun`` load, train and save the same way.

Multi-GPU training is data parallel without wrapping the model: every rank loads the same
weights and computes gradients on its part of the data, and the gradients are averaged over the
ranks (``average_gradients``) before each ``optimizer.step()``. This leaves ``SpeechLM.model``
unwrapped, which ``DistributedDataParallel`` would not (LoRA, AAA and checkpoint saving all reach
into it).

SFT (``ml.core.sft``) is the same training on N processes as on one with the same global batch:
each step's examples are split among the ranks, the loss is normalised by the global token count
(``sum_across_ranks``), gradients are averaged before they are clipped (so clipping sees the
global norm), the AAA target comes from every rank's first micro-batch, and its metrics are
global. RL (``ml.core.rl.training``) trains each rank on an equal shard of prompts, averages
gradients before clipping too, and reduces its metrics over the ranks.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
import torch.distributed as dist

from ml.core.checkpoints import METADATA_FILE, SavedCheckpoint, load_checkpoint, save_checkpoint
from ml.core.config import RlConfig, SftConfig
from ml.core.precision import place_for_mixed_precision, training_compute_dtype
from ml.core.speech.loading import load_speech_lm, resolve_model_path
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import build_tiny_speech_lm

# A random tiny model built in memory (``build_tiny_speech_lm``): smoke tests on any machine.
TINY_MODEL_SOURCE = "tiny"
# The key of the AAA target rho* in a checkpoint's metadata ``extra`` and in SFT's step metrics.
AAA_TARGET_KEY = "aaa_target"

Row = TypeVar("Row")


def resolve_device(requested: str = "auto", local_rank: int = 0) -> str:
    """Return a torch device name: "auto" is this rank's GPU when there is one, else the CPU."""
    if requested != "auto":
        return requested
    return f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"


def resolve_dtype(requested: str, device: str) -> str:
    """Return a torch dtype name: "auto" is bfloat16 on a GPU and float32 on the CPU."""
    if requested != "auto":
        if not isinstance(getattr(torch, requested, None), torch.dtype):
            raise ValueError(f"unknown dtype {requested!r}")
        return requested
    return "bfloat16" if device.startswith("cuda") else "float32"


def resolve_device_and_dtype(requested_device: str, requested_dtype: str) -> tuple[str, str]:
    """Return (device, dtype) names for a run on this machine's first device (see the two above)."""
    device = resolve_device(requested_device)
    return device, resolve_dtype(requested_dtype, device)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global RNGs (LoRA init, dropout and sampling draw from them)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def prepare_for_training(speech_lm: SpeechLM, config: SftConfig | RlConfig) -> None:
    """Apply the config's device, dtype (mixed precision: ``training_compute_dtype``), gradient
    checkpointing and LoRA to the model, once."""
    compute_dtype = training_compute_dtype(config.dtype)
    # Weights change dtype once LoRA has said which train (a bf16 LLM under LoRA is never upcast).
    speech_lm.model.to(device=config.device)
    if config.gradient_checkpointing:
        speech_lm.enable_gradient_checkpointing()
    if config.lora is not None and speech_lm.lora is None:
        speech_lm.apply_lora(config.lora)
    # After LoRA: its adapters and modules_to_save copies are trainable parameters too.
    place_for_mixed_precision(speech_lm.model, config.device, config.dtype)
    speech_lm.autocast_dtype = compute_dtype
    speech_lm.model.train()


@dataclass(frozen=True)
class StartModel:
    speech_lm: SpeechLM
    # Where the base weights of a LoRA adapter saved from this run live; None: save merged weights.
    adapter_base: str | None
    source: str
    # The AAA target rho* of the SFT run the start checkpoint came from: a resumed run keeps it
    # rather than re-targeting from the already raised rho (None: a fresh run sets its own).
    aaa_target: float | None = None


def load_start_model(source: str, device: str, dtype: str, *, for_rl: bool = False) -> StartModel:
    """Return the model a run starts from: a base model directory or URI, a checkpoint of ours
    (it has metadata.json), or ``TINY_MODEL_SOURCE``.

    A LoRA checkpoint keeps training its adapter, except in RL: the RL reference is the policy with
    its adapters switched off, so an SFT adapter is merged first and RL adds fresh adapters; the
    merged weights exist nowhere on disk, so such a run saves merged weights too.
    """
    if source == TINY_MODEL_SOURCE:
        speech_lm = build_tiny_speech_lm("qwen2_audio", seed=0)
        speech_lm.model.to(device=device, dtype=getattr(torch, dtype))
        return StartModel(speech_lm, adapter_base=None, source=source)
    local = resolve_model_path(source)
    if not (local / METADATA_FILE).is_file():
        return StartModel(
            load_speech_lm(local, device=device, dtype=dtype), adapter_base=source, source=source
        )
    loaded = load_checkpoint(source, device=device, dtype=dtype, trainable=True, verify=True)
    speech_lm = loaded.speech_lm
    # Checkpoints saved before the target was stored in ``extra`` have it in their last metrics.
    target = _finite(loaded.metadata.extra.get(AAA_TARGET_KEY))
    target = target if target is not None else _finite(loaded.metadata.metrics.get(AAA_TARGET_KEY))
    if speech_lm.lora is None:
        return StartModel(speech_lm, adapter_base=source, source=source, aaa_target=target)
    if for_rl:
        speech_lm.merged_model()
        return StartModel(speech_lm, adapter_base=None, source=source, aaa_target=target)
    return StartModel(speech_lm, adapter_base=loaded.metadata.base_model, source=source, aaa_target=target)


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def save_trained_model(
    start: StartModel,
    destination: str | Path,
    config: dict[str, Any],
    dataset_snapshot_ids: Sequence[str],
    metrics: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> SavedCheckpoint:
    """Save the trained model: its LoRA adapter over ``start.adapter_base``, or merged weights.

    The AAA target rho* the run trained towards (or the one its start carried) goes into the
    metadata's ``extra``, so a run resumed from this checkpoint keeps it (``StartModel.aaa_target``).
    """
    target = _finite(metrics.get(AAA_TARGET_KEY))
    target = target if target is not None else start.aaa_target
    carried = {AAA_TARGET_KEY: target} if target is not None else {}
    return save_checkpoint(
        start.speech_lm,
        destination,
        config=config,
        dataset_snapshot_ids=dataset_snapshot_ids,
        metrics=metrics,
        base_model=start.adapter_base,
        merge_lora=start.adapter_base is None,
        extra={"started_from": start.source, **carried, **(extra or {})},
    )


# --- data parallel ranks ---------------------------------------------------------------


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_ranks() -> Ranks:
    """Return this process's rank from the variables torchrun and accelerate set; join the group
    (NCCL on GPUs, Gloo on CPUs) when there is more than one process."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    ranks = Ranks(
        rank=int(os.environ.get("RANK", "0")),
        world_size=world_size,
        local_rank=int(os.environ.get("LOCAL_RANK", "0")),
    )
    if world_size > 1 and not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(ranks.local_rank)
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    return ranks


def shard_evenly(rows: Sequence[Row], ranks: Ranks) -> list[Row]:
    """Return this rank's rows: every rank gets the same number, the remainder is dropped.

    Equal shards mean equal step counts, so no rank waits forever in the gradient all-reduce.
    """
    per_rank = len(rows) // ranks.world_size
    if per_rank == 0:
        raise ValueError(f"{len(rows)} record(s) cannot be shared among {ranks.world_size} processes")
    return list(rows[ranks.rank * per_rank : (ranks.rank + 1) * per_rank])


def sum_across_ranks(values: Sequence[float], ranks: Ranks) -> list[float]:
    """Return the element-wise sum of ``values`` over all ranks (``values`` itself on one process).

    Every rank must call it at the same point with as many values; float64 keeps counts exact.
    """
    if ranks.world_size == 1:
        return [float(value) for value in values]
    device = f"cuda:{ranks.local_rank}" if dist.get_backend() == "nccl" else "cpu"
    tensor = torch.tensor([float(value) for value in values], dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return [float(value) for value in tensor.tolist()]


def average_gradients(parameters: Sequence[torch.nn.Parameter]) -> None:
    """Replace each parameter's gradient by its mean over all ranks (collective: every rank calls).

    A parameter that has a gradient on some rank but not on this one counts as zero here; one
    that has none on any rank keeps none, so the optimizer skips it as it would on one process.
    """
    world_size = dist.get_world_size()
    present = torch.tensor(
        [parameter.grad is not None for parameter in parameters],
        dtype=torch.int32,
        device=parameters[0].device if parameters else "cpu",
    )
    dist.all_reduce(present, op=dist.ReduceOp.MAX)
    handles = []
    reduced = []
    for parameter, anywhere in zip(parameters, present.tolist(), strict=True):
        if not anywhere:
            continue
        if parameter.grad is None:
            parameter.grad = torch.zeros_like(parameter)
        reduced.append(parameter.grad)
        handles.append(dist.all_reduce(parameter.grad, op=dist.ReduceOp.SUM, async_op=True))
    for handle in handles:
        handle.wait()
    for gradient in reduced:
        gradient.div_(world_size)
