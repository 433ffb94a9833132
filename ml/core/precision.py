"""Mixed precision for training, the standard way: fp32 master weights, bf16 autocast compute.

Pure bf16 training (weights cast to bf16 and stepped by AdamW) loses most updates: bf16 keeps 8
bits of mantissa, so a step of lr 1e-5 on a weight of 0.02 is below half its spacing and rounds
away. So a run configured with ``dtype="bfloat16"`` keeps every trainable parameter in float32
(the optimizer steps those), keeps frozen weights in bf16 (they never update, and it halves their
memory), and runs forwards under ``torch.autocast(dtype=torch.bfloat16)`` (``SpeechLM.autocast_dtype``).
Checkpoints hold each tensor in its own dtype and load in whatever dtype the loader asks for.
"""

from __future__ import annotations

import torch


def training_compute_dtype(dtype: str) -> torch.dtype | None:
    """Return the autocast dtype a training run with weights ``dtype`` computes in (None: float32).

    Training never steps low-precision weights: with "bfloat16" the trainable parameters are fp32
    master weights and the forward runs under bf16 autocast (see ``place_for_mixed_precision``).
    float16 is refused, because it would also need loss scaling, which these loops do not do.
    """
    resolved = getattr(torch, dtype, None)
    if resolved == torch.float32:
        return None
    if resolved == torch.bfloat16:
        return torch.bfloat16
    raise ValueError(
        f"training in {dtype} is not supported: use bfloat16 (fp32 master weights with bf16 "
        "autocast compute) or float32"
    )


def place_for_mixed_precision(model: torch.nn.Module, device: str, dtype: str) -> None:
    """Move ``model`` to ``device``: frozen weights (and floating buffers) in ``dtype`` (bf16 saves
    memory where nothing updates them), trainable ones as fp32 master weights, so AdamW's small
    steps are not rounded away (at lr 1e-5 most updates to a bf16 weight are smaller than half its
    spacing). Calling it again leaves fp32 master weights as they are (no rounding through bf16)."""
    low = getattr(torch, dtype)
    model.to(device=device)
    for parameter in model.parameters():
        wanted = torch.float32 if parameter.requires_grad else low
        if parameter.is_floating_point() and parameter.dtype != wanted:
            parameter.data = parameter.data.to(wanted)
    for module in model.modules():
        for name, buffer in module._buffers.items():
            if buffer is not None and buffer.is_floating_point() and buffer.dtype != low:
                module._buffers[name] = buffer.to(low)
