"""Acoustic-Anchored Attention (paper section 3.1).

rho is the attention mass that perception-span query tokens put on audio-token positions,
averaged over those query tokens and over the chosen decoder layers and heads:

    rho = 1/|P| sum_{i in P} sum_{j in A} alpha_ij,    L_SFT = L_CE + lambda_AAA * L_AAA

We take ``L_AAA = -log(rho + eps)``, averaged over the examples of a batch that have a perception
span. The log is scale-free (halving rho costs the same at any level) and pushes hardest when the
perception tokens have drifted away from the audio, which is the failure AAA targets; it is 0 at
rho = 1 and bounded by -log(eps).

How rho is measured without materialising attention maps: ``collect_audio_attention`` switches the
text decoder to the ``aaa_sdpa`` attention function registered here. It calls transformers' own
SDPA function unchanged (so logits are identical), and on the chosen layers additionally
recomputes softmax(q k^T * scale + mask) for the perception query rows only, after gathering
those rows. That costs |P| x T per head instead of T x T, and keeps the graph, so the gradient
of L_AAA reaches the query/key projections and, through the audio keys, the audio projector.

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

from ml.speech_model import SpeechBatch, SpeechLM

AAA_ATTENTION = "aaa_sdpa"
DEFAULT_AAA_EPSILON = 1e-6
_COLLECTOR_ATTRIBUTE = "_aaa_collector"


class AudioAttentionCollector:
    """Accumulates, per example, the audio attention mass of the selected query rows."""

    def __init__(
        self, query_mask: torch.Tensor, audio_mask: torch.Tensor, heads: Sequence[int] | None = None
    ):
        if query_mask.shape != audio_mask.shape:
            raise ValueError("query_mask and audio_mask must both be B x T")
        self.query_rows = [row.nonzero().flatten() for row in query_mask.to(torch.bool)]
        self.audio_mask = audio_mask.to(torch.bool)
        self.heads = list(heads) if heads is not None else None
        self._layer_values: list[list[torch.Tensor]] = [[] for _ in self.query_rows]
        self._device = self.audio_mask.device

    def observe(
        self,
        module: nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float | None,
    ) -> None:
        """Record one layer: query B x H x T x D and key B x KV x S x D, after rotary embedding."""
        heads_total, query_length, head_dim = query.shape[1], query.shape[2], query.shape[3]
        key_length = key.shape[2]
        if key_length != self.audio_mask.shape[1]:
            raise ValueError("AAA expects a full-sequence forward (no cache): key length must equal T")
        groups = heads_total // key.shape[1]
        head_index = torch.tensor(
            self.heads if self.heads is not None else range(heads_total),
            device=query.device,
            dtype=torch.long,
        )
        scale = scaling if scaling is not None else head_dim**-0.5
        self._device = query.device
        audio = self.audio_mask.to(query.device)
        for example, rows in enumerate(self.query_rows):
            if rows.numel() == 0:
                continue
            rows = rows.to(query.device)
            chosen_queries = query[example].index_select(0, head_index).index_select(1, rows).float()
            # Grouped-query attention: each query head reads key head h // groups.
            chosen_keys = key[example].index_select(0, head_index // groups).float()
            scores = torch.matmul(chosen_queries, chosen_keys.transpose(-1, -2)) * scale
            scores = _apply_mask(scores, attention_mask, example, rows, head_index, query_length, key_length)
            probabilities = torch.softmax(scores, dim=-1)
            audio_mass = torch.matmul(probabilities, audio[example].to(probabilities.dtype))
            self._layer_values[example].append(audio_mass.mean())

    def per_example_rho(self) -> torch.Tensor:
        """Return rho for each example (NaN where the example has no query rows)."""
        missing = torch.tensor(float("nan"), device=self._device)
        return torch.stack(
            [
                torch.stack(layer_values).mean() if layer_values else missing
                for layer_values in self._layer_values
            ]
        )

    def rho(self) -> torch.Tensor:
        """Return the mean rho over examples that have query rows (NaN when none has)."""
        values = self.per_example_rho()
        valid = ~values.isnan()
        return values[valid].mean() if valid.any() else values.new_tensor(float("nan"))

    def loss(self, epsilon: float = DEFAULT_AAA_EPSILON) -> torch.Tensor:
        """Return L_AAA = mean over examples of -log(rho + eps); 0 when no example has query rows."""
        values = self.per_example_rho()
        valid = ~values.isnan()
        if not valid.any():
            return values.new_zeros(())
        return -torch.log(values[valid] + epsilon).mean()


def _apply_mask(
    scores: torch.Tensor,
    attention_mask: torch.Tensor | None,
    example: int,
    rows: torch.Tensor,
    head_index: torch.Tensor,
    query_length: int,
    key_length: int,
) -> torch.Tensor:
    """Apply the layer's attention mask (bool keep-mask, additive float mask, or implicit causal)
    to scores of shape heads x rows x keys."""
    if attention_mask is None:
        # SDPA was told is_causal=True: query i sees keys up to i (shifted when keys outnumber queries).
        keys = torch.arange(key_length, device=scores.device)
        visible = keys.unsqueeze(0) <= (rows + key_length - query_length).unsqueeze(1)
        return scores.masked_fill(~visible.unsqueeze(0), float("-inf"))
    mask = attention_mask[example if attention_mask.shape[0] > 1 else 0]
    if mask.shape[0] > 1:
        mask = mask.index_select(0, head_index)
    mask = mask.index_select(1, rows)
    if mask.dtype == torch.bool:
        return scores.masked_fill(~mask, float("-inf"))
    return scores + mask.float()


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
        audio_mask = speech_lm.audio_token_mask(batch.input_ids)
        with collect_audio_attention(speech_lm, layers, query_mask, audio_mask, heads) as collector:
            speech_lm.forward(batch)
        return collector.per_example_rho()
    finally:
        speech_lm.model.train(was_training)
