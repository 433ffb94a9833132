"""A tiny SFT run that ``test_distributed_sft`` runs in one process and under ``torchrun``.

    python -m torch.distributed.run --standalone --nproc_per_node 2 -m tests.ml.core.distributed_sft OUT

trains with a per-process batch of ``GLOBAL_BATCH / world size`` and has rank 0 save the final
trainable weights and the logged metrics to OUT (``torch.save``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from ml.core.config import SftConfig
from ml.core.runtime import Ranks, init_ranks
from ml.core.sft import SftExample, train_sft
from ml.core.speech.tiny import build_tiny_speech_lm
from tests.ml.core.samples import PERCEPTION, PROMPT, voiced_audio
from webapp.lib.output_format import render_output, render_reasoning, render_strategy

GLOBAL_BATCH = 4
# 5 examples in steps of 4: the second step has one, so one of two ranks has none.
EXAMPLES = 5


def _example(index: int) -> SftExample:
    # Responses and audio of different lengths: ranks see different token counts.
    target = render_output(
        perception=PERCEPTION,
        reasoning=render_reasoning(
            context="The user lost their job.",
            latent_need="Reassurance.",
            core_demand="To be heard.",
            constraints="No advice.",
        ),
        strategy=render_strategy(["Emotional validation"], "comforting"),
        response="That sounds hard." + " I am here with you." * index,
    )
    return SftExample(voiced_audio(0.4 + 0.15 * index, seed=index), 16_000, PROMPT, target)


def train(ranks: Ranks) -> dict[str, Any]:
    """Run three steps of full-weight SFT with the AAA target hinge; return weights and history."""
    torch.set_num_threads(1)
    speech_lm = build_tiny_speech_lm("qwen2_audio", seed=0)
    config = SftConfig(
        max_steps=3,
        batch_size=GLOBAL_BATCH // ranks.world_size,
        learning_rate=1e-3,
        lambda_aaa=1.0,
        aaa_objective="target",
        # Small enough that every step is clipped: clipping must see the global norm.
        max_grad_norm=0.05,
        device="cpu",
        dtype="float32",
    )
    result = train_sft(speech_lm, [_example(index) for index in range(EXAMPLES)], config, ranks=ranks)
    weights = {
        name: parameter.detach().clone()
        for name, parameter in speech_lm.model.named_parameters()
        if parameter.requires_grad
    }
    return {"weights": weights, "history": result.history}


def main(output: str) -> None:
    ranks = init_ranks()
    outcome = train(ranks)
    if ranks.is_main:
        torch.save(outcome, Path(output))
    if ranks.world_size > 1:
        # As ``ml.cli.main``: leave together, without Gloo's teardown at interpreter exit.
        dist.barrier()
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
