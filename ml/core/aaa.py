"""Acoustic-Anchored Attention (paper section 3.1).

rho is the attention mass that perception-span query tokens put on audio-token positions (the
current turn's audio only: in a dialogue, earlier turns' audio is context, not the anchor),
averaged over those query tokens and over the chosen decoder layers and heads:

    rho = 1/|P| sum_{i in P} sum_{j in A} alpha_ij,    L_SFT = L_CE + lambda_AAA * L_AAA

The paper leaves L_AAA's form open; ``aaa_loss`` offers three, averaged over the examples of a
batch that have a perception span:

- "target" (the default): max(0, 1 - rho / target), target = ratio x the run's starting rho
  (capped at 1). Bounded in [0, 1] and 0 once rho has risen by the ratio, so it raises rho the way
  Figure 5 shows (+136%) and then leaves the perception tokens free to attend elsewhere.
- "linear": 1 - rho, bounded, a constant pull.
- "log": -log(rho + eps). Scale-free and unbounded above, it never stops pulling: at lambda 0.1
  it drove rho from 0.17 to 0.99 on the mini-replication and cost perception accuracy (issue #25).

How rho is measured without materialising attention maps: ``collect_audio_attention`` switches the
text decoder to the ``aaa_sdpa`` attention function registered here. It calls transformers' own
SDPA function unchanged (so logits are identical), and on the chosen layers additionally
recomputes softmax(q k^T * scale + mask) for the perception query rows only, after gathering
those rows. That costs |P| x T per head instead of T x T, and keeps the graph, so the gradient
of L_AAA reaches the query/key projections and, through the audio keys, the audio projector.

Memory: each observed layer keeps B x H x |P| x T float32 probabilities for backward, so on a
large model pick ``aaa_layers`` (e.g. the last third) rather than every layer.

With gradient checkpointing, call ``backward`` inside the context: the recomputed layers then
take the same path as the original forward (read ``rho`` before that, since recomputation adds
observations).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from ml.core.config import DEFAULT_AAA_EPSILON, AaaObjective
from ml.core.speech.inputs import SpeechBatch
from ml.core.speech.model import SpeechLM

AAA_ATTENTION = "aaa_sdpa"

_COLLECTOR_ATTRIBUTE = "_aaa_collector"


class AudioAttentionCollector:
    """Accumulates, per example, the audio attention mass of the selected query rows.

    All examples are handled at once: each row's query positions are padded to the longest row,
    and padding rows are dropped from the averages (they attend everywhere, so they stay finite).
    """

    def __init__(
        self, query_mask: torch.Tensor, audio_mask: torch.Tensor, heads: Sequence[int] | None = None
    ):
        if query_mask.shape != audio_mask.shape:
            raise ValueError("query_mask and audio_mask must both be B x T")
        query_mask = query_mask.to(torch.bool)
        self.row_counts = query_mask.sum(dim=1)
        width = max(int(self.row_counts.max()), 1) if query_mask.numel() else 1
        # Stable sort puts each row's query positions first, in order; the rest is padding.
        order = torch.sort((~query_mask).to(torch.int8), dim=1, stable=True).indices
        self.query_positions = order[:, :width]
        self.row_valid = torch.arange(width, device=query_mask.device).unsqueeze(
            0
        ) < self.row_counts.unsqueeze(1)
        self.audio_mask = audio_mask.to(torch.bool)
        self.heads = list(heads) if heads is not None else None
        # False: rho is only logged (plain SFT), so no graph is kept for it.
        self.track_gradient = True
        self._layer_values: list[torch.Tensor] = []
        # The mask is shared by all layers of one forward: gather its rows once.
        self._bias_source: torch.Tensor | None = None
        self._bias: torch.Tensor | None = None

    def observe(
        self,
        module: nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float | None,
    ) -> None:
        """Record one layer: query B x H x T x D and key B x KV x S x D, after rotary embedding."""
        if not self.track_gradient:
            with torch.no_grad():
                self._observe(query.detach(), key.detach(), attention_mask, scaling)
            return
        self._observe(query, key, attention_mask, scaling)

    def _observe(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float | None,
    ) -> None:
        batch, heads_total, query_length, head_dim = query.shape
        key_heads, key_length = key.shape[1], key.shape[2]
        if key_length != self.audio_mask.shape[1]:
            raise ValueError("AAA expects a full-sequence forward (no cache): key length must equal T")
        positions = self.query_positions.to(query.device)
        rows = positions.shape[1]
        groups = heads_total // key_heads
        if self.heads is None:
            chosen_heads = heads_total
            gathered = query.gather(2, positions[:, None, :, None].expand(batch, heads_total, rows, head_dim))
            # Grouped-query attention without copying keys: fold each key head's query group together.
            grouped = gathered.reshape(batch, key_heads, groups * rows, head_dim).float()
            scores = torch.matmul(grouped, key.float().transpose(-1, -2)).view(
                batch, heads_total, rows, key_length
            )
        else:
            head_index = torch.tensor(self.heads, device=query.device, dtype=torch.long)
            chosen_heads = len(self.heads)
            selected = query.index_select(1, head_index)
            gathered = selected.gather(
                2, positions[:, None, :, None].expand(batch, chosen_heads, rows, head_dim)
            )
            chosen_keys = key.index_select(1, head_index // groups)
            scores = torch.matmul(gathered.float(), chosen_keys.float().transpose(-1, -2))
        scale = scaling if scaling is not None else head_dim**-0.5
        scores = scores * scale + self._row_bias(attention_mask, query_length, key_length, query.device)
        probabilities = torch.softmax(scores, dim=-1)
        audio = self.audio_mask.to(device=query.device, dtype=probabilities.dtype)
        audio_mass = torch.matmul(probabilities, audio[:, None, :, None]).squeeze(-1)
        valid = self.row_valid.to(query.device)
        totals = (audio_mass * valid[:, None, :]).sum(dim=(1, 2))
        counts = (self.row_counts.to(query.device) * chosen_heads).clamp(min=1)
        self._layer_values.append(totals / counts)

    def _row_bias(
        self, attention_mask: torch.Tensor | None, query_length: int, key_length: int, device: torch.device
    ) -> torch.Tensor:
        """Return the additive mask (B x 1|H x rows x S) for the gathered query rows."""
        if self._bias is not None and self._bias_source is attention_mask:
            return self._bias
        positions = self.query_positions.to(device)
        if attention_mask is None:
            # SDPA was told is_causal=True: query i sees keys up to i (shifted when keys outnumber queries).
            keys = torch.arange(key_length, device=device)
            visible = keys[None, None, :] <= (positions + key_length - query_length)[:, :, None]
            rows = visible.unsqueeze(1)
        else:
            mask = attention_mask.expand(positions.shape[0], -1, -1, -1)
            rows = mask.gather(2, positions[:, None, :, None].expand(-1, mask.shape[1], -1, key_length))
        if rows.dtype == torch.bool:
            bias = torch.zeros(rows.shape, device=device).masked_fill(~rows, float("-inf"))
        else:
            bias = rows.float()
        # Padding rows may point at fully masked positions; let them see everything to stay finite.
        bias = torch.where(self.row_valid.to(device)[:, None, :, None], bias, torch.zeros_like(bias))
        self._bias_source, self._bias = attention_mask, bias
        return bias

    def per_example_rho(self) -> torch.Tensor:
        """Return rho for each example (NaN where the example has no query rows or nothing was observed)."""
        if not self._layer_values:
            return torch.full(self.row_counts.shape, float("nan"), device=self.audio_mask.device)
        values = torch.stack(self._layer_values).mean(dim=0)
        has_rows = self.row_counts.to(values.device) > 0
        return torch.where(has_rows, values, torch.full_like(values, float("nan")))

    def rho(self) -> torch.Tensor:
        """Return the mean rho over examples that have query rows (NaN when none has)."""
        values = self.per_example_rho()
        valid = ~values.isnan()
        return values[valid].mean() if valid.any() else values.new_tensor(float("nan"))

    def loss(
        self,
        epsilon: float = DEFAULT_AAA_EPSILON,
        objective: AaaObjective = "log",
        target: float | None = None,
    ) -> torch.Tensor:
        """Return L_AAA (``aaa_loss``) over the examples with query rows; 0 when none has."""
        return aaa_loss(self.per_example_rho(), objective, target, epsilon)


def aaa_loss(
    per_example_rho: torch.Tensor,
    objective: AaaObjective,
    target: float | None = None,
    epsilon: float = DEFAULT_AAA_EPSILON,
) -> torch.Tensor:
    """Return L_AAA averaged over the examples whose rho is not NaN (module docstring); 0 when none.

    "target" needs ``target`` in (0, 1]: the rho at which the hinge stops pulling.
    """
    valid = ~per_example_rho.isnan()
    if not valid.any():
        return per_example_rho.new_zeros(())
    rho = per_example_rho[valid]
    if objective == "log":
        return -torch.log(rho + epsilon).mean()
    if objective == "linear":
        return (1.0 - rho).mean()
    if objective == "target":
        if target is None or not 0.0 < target <= 1.0:
            raise ValueError(f"the target objective needs a target rho in (0, 1], got {target}")
        return torch.relu(1.0 - rho / target).mean()
    raise ValueError(f"unknown AAA objective {objective!r}")


def target_rho(starting_rho: float, ratio: float) -> float:
    """Return the target hinge's rho: ``ratio`` x the starting rho, at most 1."""
    if not starting_rho > 0.0:
        raise ValueError(f"the starting rho must be positive, got {starting_rho}")
    return min(1.0, ratio * starting_rho)


def aaa_sdpa_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """SDPA attention that also reports audio attention mass on layers with an active collector."""
    output = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    collector: AudioAttentionCollector | None = getattr(module, _COLLECTOR_ATTRIBUTE, None)
    if collector is not None:
        collector.observe(module, query, key, attention_mask, kwargs.get("scaling"))
    return output


AttentionInterface.register(AAA_ATTENTION, aaa_sdpa_attention_forward)
# Masks are built per attention implementation name; ours wants exactly what SDPA gets.
AttentionMaskInterface.register(AAA_ATTENTION, sdpa_mask)


def resolve_layers(speech_lm: SpeechLM, layers: Sequence[int] | None) -> list[int]:
    """Return sorted layer indices (None = every decoder layer; negatives count from the end)."""
    count = speech_lm.num_decoder_layers
    if layers is None:
        return list(range(count))
    resolved = sorted({index + count if index < 0 else index for index in layers})
    if not resolved or resolved[0] < 0 or resolved[-1] >= count:
        raise ValueError(f"AAA layers {list(layers)} out of range for {count} decoder layers")
    return resolved


@contextmanager
def collect_audio_attention(
    speech_lm: SpeechLM,
    layers: Sequence[int] | None,
    query_mask: torch.Tensor,
    audio_mask: torch.Tensor,
    heads: Sequence[int] | None = None,
) -> Iterator[AudioAttentionCollector]:
    """Within the block, forward passes record rho for ``query_mask`` rows over ``audio_mask`` keys.

    ``query_mask`` and ``audio_mask`` are bool B x T over ``input_ids`` positions; ``layers``
    and ``heads`` pick what rho averages over (None = all).
    """
    collector = AudioAttentionCollector(query_mask, audio_mask, heads)
    modules = speech_lm.decoder_attention_modules()
    chosen = [modules[index] for index in resolve_layers(speech_lm, layers)]
    config: Any = speech_lm.language_model.config
    previous = config._attn_implementation
    config._attn_implementation = AAA_ATTENTION
    for module in chosen:
        setattr(module, _COLLECTOR_ATTRIBUTE, collector)
    try:
        yield collector
    finally:
        for module in chosen:
            delattr(module, _COLLECTOR_ATTRIBUTE)
        config._attn_implementation = previous


def perception_query_mask(speech_lm: SpeechLM, batch: SpeechBatch) -> torch.Tensor:
    """Return the bool B x T mask of perception-span tokens (AAA's query rows)."""
    return speech_lm.span_token_mask(batch, "perception")


@torch.no_grad()
def measure_rho(
    speech_lm: SpeechLM,
    batch: SpeechBatch,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
) -> torch.Tensor:
    """Return per-example rho for a batch with targets, without building a graph."""
    was_training = speech_lm.model.training
    speech_lm.model.eval()
    try:
        batch = batch.to(speech_lm.device)
        query_mask = perception_query_mask(speech_lm, batch)
        audio_mask = speech_lm.current_audio_mask(batch.input_ids)
        with collect_audio_attention(speech_lm, layers, query_mask, audio_mask, heads) as collector:
            speech_lm.forward(batch)
        return collector.per_example_rho()
    finally:
        speech_lm.model.train(was_training)
