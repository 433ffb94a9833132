"""One small interface over the transformers speech LLMs EchoChat is trained from.

``SpeechLM`` hides what differs between models (chat template, how audio becomes placeholder
tokens, where the language model sits, what to save) behind the few operations training,
reward scoring and inference need: build a batch with labels masked to the target, run a
forward pass, generate, and locate audio tokens and output-format spans in ``input_ids``.

Adapters are registered by the ``model_type`` of the checkpoint's config.json:

- ``qwen2_audio`` -> ``Qwen2AudioSpeechLM`` (``Qwen2AudioForConditionalGeneration`` and the
  real ``Qwen2AudioProcessor``);
- ``qwen2_5_omni`` / ``qwen2_5_omni_thinker`` -> ``Qwen25OmniThinkerSpeechLM``
  (``Qwen2_5OmniThinkerForConditionalGeneration``). Its processor class also wants image and
  video processors, which need torchvision and Pillow; speech only needs the Whisper feature
  extractor and the tokenizer, so this adapter expands the audio placeholder itself with the
  same token count formula as ``Qwen2_5OmniProcessor``.

A remote-code model (Kimi-Audio, the paper's base) is added by subclassing ``SpeechLM``,
overriding ``from_local_path`` to call ``from_pretrained(..., trust_remote_code=True)`` and
decorating it with ``@register_speech_lm("kimi_audio")``; nothing else changes.

Weights come from a local directory or an ``s3://bucket/prefix`` URI (downloaded once with boto3
into a cache directory); never from a model hub. ``build_tiny_speech_lm`` builds a random model
of the real class with a locally trained tokenizer, for tests and benchmarks without downloads.

Audio is mono float32 at 16 kHz (``SAMPLE_RATE``); ``resample`` converts other rates.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from math import gcd
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import torch
import torch.nn.functional as F
from scipy.signal import resample_poly
from torch import nn

from webapp.lib.output_format import OUTPUT_TAGS, SpanName, parse_output, token_spans

SAMPLE_RATE = 16_000
IGNORE_INDEX = -100
# Audio shorter than this yields a single audio token, which Qwen2-Audio mistakes for the
# legacy (unexpanded) placeholder format.
MIN_AUDIO_SECONDS = 0.1

AUDIO_PLACEHOLDER = "<|AUDIO|>"
AUDIO_BOS = "<|audio_bos|>"
AUDIO_EOS = "<|audio_eos|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"


@dataclass(frozen=True)
class LoraSettings:
    """LoRA on the language model's attention projections (section 5.1: LoRA fine-tuning).

    ``train_audio_projector`` keeps the audio projector fully trainable so AAA's gradient, which
    reaches the audio keys, can also move how audio is embedded.
    """

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    train_audio_projector: bool = True

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as JSON-ready values."""
        values = asdict(self)
        values["target_modules"] = list(self.target_modules)
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> LoraSettings:
        """Return settings read back from ``to_dict``."""
        return cls(**{**values, "target_modules": tuple(values.get("target_modules", cls.target_modules))})


@dataclass(frozen=True)
class SpeechExample:
    """One conversation turn: user audio (16 kHz mono float32), instruction, optional target."""

    audio: np.ndarray
    prompt: str
    target: str | None = None


@dataclass
class SpeechBatch:
    """Model inputs plus where each row's target starts and how its tokens map to characters.

    ``model_inputs`` holds ``input_ids``, ``attention_mask``, ``input_features``,
    ``feature_attention_mask`` and, when targets were given, ``labels`` (``IGNORE_INDEX`` outside
    the target). ``target_starts[i]`` is the position of row i's first target token (-1 without a
    target); ``target_offsets[i]`` the character range of each target token in ``target_texts[i]``
    (the closing end-of-turn token has an empty range).
    """

    model_inputs: dict[str, torch.Tensor]
    target_texts: list[str | None]
    target_starts: list[int]
    target_offsets: list[list[tuple[int, int]]]

    @property
    def input_ids(self) -> torch.Tensor:
        return self.model_inputs["input_ids"]

    @property
    def attention_mask(self) -> torch.Tensor:
        return self.model_inputs["attention_mask"]

    @property
    def labels(self) -> torch.Tensor | None:
        return self.model_inputs.get("labels")

    def completion_mask(self) -> torch.Tensor:
        """Return a bool B x T mask of target tokens (all False without targets)."""
        labels = self.labels
        if labels is None:
            return torch.zeros_like(self.input_ids, dtype=torch.bool)
        return labels != IGNORE_INDEX

    def to(self, device: torch.device | str) -> SpeechBatch:
        """Return the batch with its tensors on ``device``."""
        moved = {name: tensor.to(device) for name, tensor in self.model_inputs.items()}
        return SpeechBatch(moved, self.target_texts, self.target_starts, self.target_offsets)


@dataclass
class SpeechLMOutput:
    logits: torch.Tensor
    loss: torch.Tensor | None
    # Per-layer B x H x T x T maps, only when asked for with output_attentions on an eager model.
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass(frozen=True)
class EncodedPrompt:
    """A rendered prompt with its audio placeholders expanded and tokenized."""

    input_ids: list[int]
    input_features: torch.Tensor
    feature_attention_mask: torch.Tensor


def resample(audio: np.ndarray, sample_rate: int, target_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Return mono float32 audio resampled to ``target_rate`` (polyphase filter)."""
    samples = np.asarray(audio, dtype=np.float32)
    if samples.ndim == 2:
        samples = samples.mean(axis=0 if samples.shape[0] < samples.shape[1] else 1)
    if sample_rate == target_rate:
        return samples
    divisor = gcd(sample_rate, target_rate)
    return resample_poly(samples, target_rate // divisor, sample_rate // divisor).astype(np.float32)


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Return the mean next-token cross-entropy over label positions (float32 for stability)."""
    shifted_labels = labels[:, 1:]
    positions = shifted_labels != IGNORE_INDEX
    if not positions.any():
        return logits.sum() * 0.0
    # Only label positions are upcast: full-vocabulary float32 logits for every token would
    # dominate memory on a 150k vocabulary.
    selected = logits[:, :-1][positions].float()
    return F.cross_entropy(selected, shifted_labels[positions])


def completion_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Return B x T log-probabilities of each label token, aligned with ``labels`` (0 elsewhere).

    Position t holds log p(labels[t] | tokens < t), so the result lines up with
    ``SpeechBatch.completion_mask()`` and with span ranges from ``target_span_token_ranges``.
    """
    logprobs = torch.zeros(labels.shape, dtype=torch.float32, device=logits.device)
    shifted_labels = labels[:, 1:]
    positions = shifted_labels != IGNORE_INDEX
    if positions.any():
        selected = torch.log_softmax(logits[:, :-1][positions].float(), dim=-1)
        picked = selected.gather(-1, shifted_labels[positions].unsqueeze(-1)).squeeze(-1)
        logprobs[:, 1:][positions] = picked
    return logprobs


class SpeechLM(ABC):
    """A speech LLM with its tokenizer and feature extractor; see the module docstring."""

    arch: ClassVar[str]
    default_system_prompt: ClassVar[str]
    # Module name (suffix) of the audio-to-text projector, kept trainable under LoRA.
    projector_module: ClassVar[str]

    def __init__(
        self, model: nn.Module, tokenizer: Any, feature_extractor: Any, processor: Any = None
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.feature_extractor = feature_extractor
        self.processor = processor
        self.system_prompt = self.default_system_prompt
        self.lora: LoraSettings | None = None

    # --- adapter hooks -------------------------------------------------------------------

    @abstractmethod
    def render_prompt(self, prompt: str) -> str:
        """Return the chat-formatted user turn with one audio placeholder, ending where the
        assistant's answer begins."""

    @abstractmethod
    def encode_prompt(self, audio: np.ndarray, rendered_prompt: str) -> EncodedPrompt:
        """Return the prompt's token ids (audio placeholder expanded) and its audio features."""

    @abstractmethod
    def save_preprocessing(self, directory: Path) -> None:
        """Write the tokenizer and feature extractor (or processor) to ``directory``."""

    @classmethod
    @abstractmethod
    def from_local_path(
        cls, path: Path, device: torch.device | str, dtype: torch.dtype, attn_implementation: str
    ) -> SpeechLM:
        """Return the adapter loaded from a local checkpoint directory."""

    # --- shared behaviour ----------------------------------------------------------------

    @property
    def base_model(self) -> nn.Module:
        """Return the transformers model, unwrapped from PEFT when LoRA is applied."""
        get_base_model = getattr(self.model, "get_base_model", None)
        return get_base_model() if callable(get_base_model) else self.model

    @property
    def config(self) -> Any:
        return self.base_model.config

    @property
    def language_model(self) -> nn.Module:
        """Return the text decoder (its ``layers`` hold the attention AAA observes)."""
        base: Any = self.base_model
        return cast(nn.Module, base.model.language_model)

    def decoder_attention_modules(self) -> list[nn.Module]:
        """Return the text decoder's self-attention modules, one per layer."""
        layers: Sequence[nn.Module] = self.language_model.layers  # type: ignore[assignment]
        return [layer.self_attn for layer in layers]  # type: ignore[misc]

    @property
    def num_decoder_layers(self) -> int:
        return len(self.decoder_attention_modules())

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def audio_token_id(self) -> int:
        return int(self.config.audio_token_id)

    @property
    def end_of_turn_id(self) -> int:
        return int(self.tokenizer.convert_tokens_to_ids(IM_END))

    @property
    def pad_token_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad) if pad is not None else int(self.tokenizer.convert_tokens_to_ids(END_OF_TEXT))

    def _stop_token_ids(self) -> list[int]:
        ids = {self.end_of_turn_id, int(self.tokenizer.convert_tokens_to_ids(END_OF_TEXT))}
        return sorted(token for token in ids if token is not None and token >= 0)

    def _audio_features(self, audio: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Return Whisper features padded to the extractor's chunk, their mask, and the number
        of audio tokens the encoder produces (the formula both Qwen processors use)."""
        samples = _checked_audio(audio)
        features = self.feature_extractor(
            samples,
            sampling_rate=SAMPLE_RATE,
            return_attention_mask=True,
            padding="max_length",
            return_tensors="pt",
        )
        frames = int(features["attention_mask"].sum())
        num_tokens = (((frames - 1) // 2 + 1) - 2) // 2 + 1
        return features["input_features"], features["attention_mask"], num_tokens

    def build_inputs(self, audio: np.ndarray, prompt: str, target: str | None = None) -> SpeechBatch:
        """Return a one-row batch; with a target, labels cover the target and end-of-turn only."""
        return self.collate([SpeechExample(audio=audio, prompt=prompt, target=target)])

    def collate(self, examples: Sequence[SpeechExample], padding_side: str = "right") -> SpeechBatch:
        """Return a padded batch (right padding for training, left for generation)."""
        if not examples:
            raise ValueError("cannot collate an empty batch")
        rows: list[list[int]] = []
        label_rows: list[list[int]] = []
        starts: list[int] = []
        offsets: list[list[tuple[int, int]]] = []
        features: list[torch.Tensor] = []
        feature_masks: list[torch.Tensor] = []
        for example in examples:
            encoded = self.encode_prompt(example.audio, self.render_prompt(example.prompt))
            features.append(encoded.input_features)
            feature_masks.append(encoded.feature_attention_mask)
            ids = list(encoded.input_ids)
            labels = [IGNORE_INDEX] * len(ids)
            if example.target is None:
                starts.append(-1)
                offsets.append([])
            else:
                target = self.tokenizer(example.target, add_special_tokens=False, return_offsets_mapping=True)
                target_ids = [*target["input_ids"], self.end_of_turn_id]
                end = len(example.target)
                starts.append(len(ids))
                offsets.append([*(tuple(pair) for pair in target["offset_mapping"]), (end, end)])
                ids += target_ids
                labels += target_ids
            rows.append(ids)
            label_rows.append(labels)

        width = max(len(row) for row in rows)
        input_ids = torch.full((len(rows), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
        label_tensor = torch.full((len(rows), width), IGNORE_INDEX, dtype=torch.long)
        for index, (row, labels) in enumerate(zip(rows, label_rows, strict=True)):
            pad = width - len(row)
            begin = pad if padding_side == "left" else 0
            input_ids[index, begin : begin + len(row)] = torch.tensor(row)
            attention_mask[index, begin : begin + len(row)] = 1
            label_tensor[index, begin : begin + len(row)] = torch.tensor(labels)
            if starts[index] >= 0:
                starts[index] += begin

        model_inputs = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "input_features": torch.cat(features, dim=0),
            "feature_attention_mask": torch.cat(feature_masks, dim=0),
        }
        if any(example.target is not None for example in examples):
            model_inputs["labels"] = label_tensor
        return SpeechBatch(
            model_inputs=model_inputs,
            target_texts=[example.target for example in examples],
            target_starts=starts,
            target_offsets=offsets,
        )

    def forward(self, batch: SpeechBatch, **model_kwargs: Any) -> SpeechLMOutput:
        """Return logits and, when the batch has labels, the mean target cross-entropy."""
        batch = batch.to(self.device)
        inputs = {name: tensor for name, tensor in batch.model_inputs.items() if name != "labels"}
        outputs = self.model(**inputs, use_cache=False, **model_kwargs)
        labels = batch.labels
        loss = causal_lm_loss(outputs.logits, labels) if labels is not None else None
        return SpeechLMOutput(
            logits=outputs.logits, loss=loss, attentions=getattr(outputs, "attentions", None)
        )

    def audio_token_mask(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Return a bool mask of the positions holding audio embeddings."""
        return input_ids == self.audio_token_id

    def target_span_token_ranges(self, batch: SpeechBatch) -> list[dict[SpanName, tuple[int, int]]]:
        """Return, per row, each output-format span's ``[start, end)`` positions in ``input_ids``."""
        ranges: list[dict[SpanName, tuple[int, int]]] = []
        for text, start, offsets in zip(
            batch.target_texts, batch.target_starts, batch.target_offsets, strict=True
        ):
            if text is None:
                ranges.append({})
                continue
            relative = token_spans(parse_output(text), offsets)
            ranges.append({name: (begin + start, end + start) for name, (begin, end) in relative.items()})
        return ranges

    def span_token_mask(self, batch: SpeechBatch, span: SpanName) -> torch.Tensor:
        """Return a bool B x T mask of the tokens of one span (e.g. perception, for AAA)."""
        mask = torch.zeros_like(batch.input_ids, dtype=torch.bool)
        for row, spans in enumerate(self.target_span_token_ranges(batch)):
            if span in spans:
                begin, end = spans[span]
                mask[row, begin:end] = True
        return mask

    @torch.no_grad()
    def generate_batch(
        self,
        items: Sequence[tuple[np.ndarray, str]],
        max_new_tokens: int = 512,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        num_return_sequences: int = 1,
    ) -> list[list[str]]:
        """Return ``num_return_sequences`` decoded completions for each (audio, prompt) item."""
        batch = self.collate([SpeechExample(audio, prompt) for audio, prompt in items], padding_side="left")
        batch = batch.to(self.device)
        sampling: dict[str, Any] = {"do_sample": do_sample}
        if do_sample:
            sampling.update(temperature=temperature, top_p=top_p)
        was_training = self.model.training
        self.model.eval()
        try:
            generated = self.model.generate(  # type: ignore[operator]
                **batch.model_inputs,
                max_new_tokens=max_new_tokens,
                num_return_sequences=num_return_sequences,
                eos_token_id=self._stop_token_ids(),
                pad_token_id=self.pad_token_id,
                **sampling,
            )
        finally:
            self.model.train(was_training)
        new_tokens = generated[:, batch.input_ids.shape[1] :]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        return [
            texts[index : index + num_return_sequences]
            for index in range(0, len(texts), num_return_sequences)
        ]

    def generate(
        self,
        audio: np.ndarray,
        prompt: str,
        max_new_tokens: int = 512,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
    ) -> str:
        """Return one decoded completion (greedy unless ``do_sample``)."""
        return self.generate_batch(
            [(audio, prompt)], max_new_tokens, do_sample=do_sample, temperature=temperature, top_p=top_p
        )[0][0]

    def trainable_parameters(self) -> list[nn.Parameter]:
        """Return the parameters an optimizer should update."""
        return [parameter for parameter in self.model.parameters() if parameter.requires_grad]

    def enable_gradient_checkpointing(self) -> None:
        """Recompute decoder activations in backward (non-reentrant, so AAA's side outputs keep gradients)."""
        base = self.base_model
        kwargs = {"use_reentrant": False}
        enable = getattr(base, "activation_checkpointing_enable", None)
        if callable(enable):
            enable(activation_checkpointing_kwargs=kwargs)
        else:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)  # type: ignore[operator]

    def apply_lora(self, settings: LoraSettings) -> None:
        """Wrap the model with LoRA adapters on the language model only (the audio encoder is frozen)."""
        from peft import LoraConfig, get_peft_model

        targets = "|".join(settings.target_modules)
        lora_config = LoraConfig(
            r=settings.rank,
            lora_alpha=settings.alpha,
            lora_dropout=settings.dropout,
            # A regex, so the audio encoder's same-named projections stay untouched.
            target_modules=rf".*language_model\.layers\.\d+\..*\.({targets})",
            modules_to_save=[self.projector_module] if settings.train_audio_projector else None,
        )
        self.model = get_peft_model(self.model, lora_config)
        self.lora = settings

    def merged_model(self) -> nn.Module:
        """Return a plain transformers model with LoRA weights folded in (the model itself without LoRA)."""
        merge = getattr(self.model, "merge_and_unload", None)
        if callable(merge):
            merged: nn.Module = merge()
            self.model = merged
            self.lora = None
        return self.model

    def save_pretrained(self, directory: str | Path) -> None:
        """Write weights (the LoRA adapter alone when LoRA is applied) and preprocessing files."""
        target = Path(directory)
        target.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(target)  # type: ignore[operator]
        self.save_preprocessing(target)


SpeechLMType = TypeVar("SpeechLMType", bound=type[SpeechLM])
SPEECH_LM_ADAPTERS: dict[str, type[SpeechLM]] = {}


def register_speech_lm(*model_types: str) -> Callable[[SpeechLMType], SpeechLMType]:
    """Register an adapter class for the config.json ``model_type`` values it can load."""

    def register(cls: SpeechLMType) -> SpeechLMType:
        for model_type in model_types:
            SPEECH_LM_ADAPTERS[model_type] = cls
        return cls

    return register


def _checked_audio(audio: np.ndarray) -> np.ndarray:
    samples = np.asarray(audio, dtype=np.float32)
    if samples.ndim != 1:
        raise ValueError(f"expected mono audio (1-D array), got shape {samples.shape}")
    if samples.shape[0] < MIN_AUDIO_SECONDS * SAMPLE_RATE:
        raise ValueError(f"audio is shorter than {MIN_AUDIO_SECONDS} s")
    return samples


@register_speech_lm("qwen2_audio")
class Qwen2AudioSpeechLM(SpeechLM):
    arch = "qwen2_audio"
    default_system_prompt = "You are a helpful assistant."
    projector_module = "multi_modal_projector"

    def render_prompt(self, prompt: str) -> str:
        """Return Qwen2-Audio's chat template for one audio turn."""
        return (
            f"{IM_START}system\n{self.system_prompt}{IM_END}\n"
            f"{IM_START}user\nAudio 1: {AUDIO_BOS}{AUDIO_PLACEHOLDER}{AUDIO_EOS}\n{prompt}{IM_END}\n"
            f"{IM_START}assistant\n"
        )

    def encode_prompt(self, audio: np.ndarray, rendered_prompt: str) -> EncodedPrompt:
        """Return the real processor's encoding of the prompt and audio."""
        encoded = self.processor(
            text=rendered_prompt, audio=_checked_audio(audio), sampling_rate=SAMPLE_RATE, return_tensors="pt"
        )
        return EncodedPrompt(
            input_ids=encoded["input_ids"][0].tolist(),
            input_features=encoded["input_features"],
            feature_attention_mask=encoded["feature_attention_mask"],
        )

    def save_preprocessing(self, directory: Path) -> None:
        self.processor.save_pretrained(directory)

    @classmethod
    def from_local_path(
        cls, path: Path, device: torch.device | str, dtype: torch.dtype, attn_implementation: str
    ) -> SpeechLM:
        from transformers import AutoProcessor, Qwen2AudioForConditionalGeneration

        model = cast(
            nn.Module,
            Qwen2AudioForConditionalGeneration.from_pretrained(
                path, dtype=dtype, attn_implementation=attn_implementation
            ),
        )
        model.to(device)
        processor = AutoProcessor.from_pretrained(path)
        return cls(model, processor.tokenizer, processor.feature_extractor, processor)


@register_speech_lm("qwen2_5_omni", "qwen2_5_omni_thinker")
class Qwen25OmniThinkerSpeechLM(SpeechLM):
    arch = "qwen2_5_omni_thinker"
    default_system_prompt = (
        "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
        "auditory and visual inputs, as well as generating text and speech."
    )
    projector_module = "audio_tower.proj"

    def render_prompt(self, prompt: str) -> str:
        """Return Qwen2.5-Omni's chat template for one audio turn."""
        return (
            f"{IM_START}system\n{self.system_prompt}{IM_END}\n"
            f"{IM_START}user\n{AUDIO_BOS}{AUDIO_PLACEHOLDER}{AUDIO_EOS}{prompt}{IM_END}\n"
            f"{IM_START}assistant\n"
        )

    def encode_prompt(self, audio: np.ndarray, rendered_prompt: str) -> EncodedPrompt:
        """Expand the placeholder as ``Qwen2_5OmniProcessor`` does, then tokenize."""
        features, mask, num_tokens = self._audio_features(audio)
        expanded = rendered_prompt.replace(AUDIO_PLACEHOLDER, AUDIO_PLACEHOLDER * num_tokens, 1)
        input_ids = self.tokenizer(expanded, add_special_tokens=False)["input_ids"]
        return EncodedPrompt(input_ids=list(input_ids), input_features=features, feature_attention_mask=mask)

    def save_preprocessing(self, directory: Path) -> None:
        self.tokenizer.save_pretrained(directory)
        self.feature_extractor.save_pretrained(directory)

    @classmethod
    def from_local_path(
        cls, path: Path, device: torch.device | str, dtype: torch.dtype, attn_implementation: str
    ) -> SpeechLM:
        from transformers import (
            AutoTokenizer,
            Qwen2_5OmniThinkerForConditionalGeneration,
            WhisperFeatureExtractor,
        )

        model = cast(
            nn.Module,
            Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(
                path, dtype=dtype, attn_implementation=attn_implementation
            ),
        )
        model.to(device)
        tokenizer = AutoTokenizer.from_pretrained(path)
        feature_extractor = WhisperFeatureExtractor.from_pretrained(path)
        return cls(model, tokenizer, feature_extractor)


def adapter_for_model_type(model_type: str) -> type[SpeechLM]:
    """Return the registered adapter class for a config.json ``model_type``."""
    try:
        return SPEECH_LM_ADAPTERS[model_type]
    except KeyError:
        known = ", ".join(sorted(SPEECH_LM_ADAPTERS))
        raise ValueError(f"no speech LM adapter for model_type {model_type!r} (known: {known})") from None


# --- loading ---------------------------------------------------------------------------


def split_s3_uri(uri: str) -> tuple[str, str]:
    """Return (bucket, key prefix) of ``s3://bucket/prefix``."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri}")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    if not bucket:
        raise ValueError(f"s3 URI has no bucket: {uri}")
    return bucket, prefix.strip("/")


def default_cache_dir() -> Path:
    """Return where S3 model copies are kept (``ECHOSTUDIO_MODEL_CACHE`` or ~/.cache/echostudio)."""
    configured = os.environ.get("ECHOSTUDIO_MODEL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "echostudio" / "models"


def download_s3_prefix(uri: str, destination: Path, client: Any = None) -> Path:
    """Copy every object under an S3 prefix into ``destination``; objects already there with the
    same size are skipped, so a second load costs one listing."""
    import boto3

    bucket, prefix = split_s3_uri(uri)
    s3 = client if client is not None else boto3.client("s3")
    listing_prefix = f"{prefix}/" if prefix else ""
    found = False
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=listing_prefix):
        for entry in page.get("Contents", []):
            key: str = entry["Key"]
            relative = key[len(listing_prefix) :]
            if not relative or relative.endswith("/"):
                continue
            found = True
            local = destination / relative
            if local.exists() and local.stat().st_size == entry["Size"]:
                continue
            local.parent.mkdir(parents=True, exist_ok=True)
            partial = local.with_name(local.name + ".partial")
            s3.download_file(bucket, key, str(partial))
            partial.replace(local)
    if not found:
        raise FileNotFoundError(f"nothing stored under {uri}")
    return destination


def resolve_model_path(path_or_uri: str | Path, cache_dir: Path | None = None) -> Path:
    """Return a local directory for a local path or an ``s3://`` URI (downloaded into the cache)."""
    text = str(path_or_uri)
    if text.startswith("s3://"):
        bucket, prefix = split_s3_uri(text)
        destination = (cache_dir or default_cache_dir()) / bucket / prefix
        return download_s3_prefix(text, destination)
    path = Path(text)
    if not path.is_dir():
        raise FileNotFoundError(f"model directory not found: {path}")
    return path


def _resolve_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    resolved = getattr(torch, dtype, None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return resolved


def load_speech_lm(
    path_or_uri: str | Path,
    device: torch.device | str = "cpu",
    dtype: torch.dtype | str = torch.float32,
    lora: LoraSettings | None = None,
    gradient_checkpointing: bool = False,
    cache_dir: Path | None = None,
    attn_implementation: str = "sdpa",
) -> SpeechLM:
    """Return the speech LM stored at a local directory or S3 prefix, ready to train or generate.

    The adapter is chosen from config.json's ``model_type``. ``lora`` wraps the model with new
    LoRA adapters; ``gradient_checkpointing`` recomputes decoder activations in backward.
    """
    local = resolve_model_path(path_or_uri, cache_dir)
    config = json.loads((local / "config.json").read_text())
    adapter = adapter_for_model_type(config["model_type"])
    speech_lm = adapter.from_local_path(local, device, _resolve_dtype(dtype), attn_implementation)
    if gradient_checkpointing:
        speech_lm.enable_gradient_checkpointing()
    if lora is not None:
        speech_lm.apply_lora(lora)
    return speech_lm


# --- tiny models for tests and benchmarks ----------------------------------------------

_TINY_CORPUS = (
    "I feel so tired today and nobody listens to me.",
    "My voice is shaking because I am nervous about the interview tomorrow.",
    "Great, another Monday. I just love it when the train is late again.",
    "I lost my job last week and I do not know what to tell my family.",
    "We won the match! I can not believe it, I am so happy right now!",
    "The user speaks slowly with a low pitch and a falling intonation.",
    "High energy, fast speaking rate, rising pitch, strong stress on the last word.",
    "Emotion: sad. Intensity: strong. Polarity: negative. Prosody: soft and trembling.",
    "Context: the user failed an exam. Latent need: reassurance and acceptance.",
    "Core demand: to be heard without judgement. Constraints: avoid quick advice.",
    "Strategies: emotional validation; reassurance; gentle guidance; cognitive reframing.",
    "Speech style: comforting. Speech style: calm. Speech style: excited.",
    "That sounds really hard. It makes sense that you feel this way, and I am here with you.",
    "Congratulations! That is wonderful news, you worked so hard for this.",
    "Take a slow breath with me. We can think about the next step together.",
    "Describe the speaker's emotion, then reason about their needs and respond with empathy.",
)
_SPECIAL_TOKENS = (
    END_OF_TEXT,
    IM_START,
    IM_END,
    AUDIO_PLACEHOLDER,
    AUDIO_BOS,
    AUDIO_EOS,
    "<|IMAGE|>",
    "<|VIDEO|>",
    "<|vision_bos|>",
    "<|vision_eos|>",
)
TINY_AUDIO_MEL_BINS = 16


def build_tiny_tokenizer(vocab_size: int = 512) -> Any:
    """Return a byte-level BPE tokenizer trained on a small in-code corpus, with Qwen's chat and
    audio special tokens and the output-format tags as single tokens (so spans align exactly)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(list(_TINY_CORPUS) * 4, trainer)
    # Plain added tokens, not special ones: decoding with skip_special_tokens must keep the tags.
    backend.add_tokens([AddedToken(tag, normalized=False) for tag in OUTPUT_TAGS])
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=IM_END,
        pad_token=END_OF_TEXT,
        extra_special_tokens={
            "audio_token": AUDIO_PLACEHOLDER,
            "audio_bos_token": AUDIO_BOS,
            "audio_eos_token": AUDIO_EOS,
            "image_token": "<|IMAGE|>",
            "video_token": "<|VIDEO|>",
            "vision_bos_token": "<|vision_bos|>",
            "vision_eos_token": "<|vision_eos|>",
        },
    )


@dataclass(frozen=True)
class TinySpec:
    """Sizes of a tiny random speech LM (defaults: a test-sized model, about 0.2M parameters)."""

    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    audio_hidden_size: int = 32
    audio_layers: int = 1
    audio_heads: int = 2
    # Whisper pads audio to this many seconds; the encoder yields 25 audio tokens per second.
    audio_chunk_seconds: int = 2
    vocab_size: int = 512


def build_tiny_speech_lm(arch: str = "qwen2_audio", seed: int = 0, spec: TinySpec | None = None) -> SpeechLM:
    """Return a randomly initialised speech LM of the real model class, built offline."""
    from transformers import WhisperFeatureExtractor

    sizes = spec or TinySpec()
    torch.manual_seed(seed)
    tokenizer = build_tiny_tokenizer(sizes.vocab_size)
    feature_extractor = WhisperFeatureExtractor(
        feature_size=TINY_AUDIO_MEL_BINS,
        sampling_rate=SAMPLE_RATE,
        hop_length=160,
        chunk_length=sizes.audio_chunk_seconds,
        n_fft=400,
        return_attention_mask=True,
    )
    text_config: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "hidden_size": sizes.hidden_size,
        "intermediate_size": sizes.intermediate_size,
        "num_hidden_layers": sizes.num_hidden_layers,
        "num_attention_heads": sizes.num_attention_heads,
        "num_key_value_heads": sizes.num_key_value_heads,
        "max_position_embeddings": 2048,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.convert_tokens_to_ids(IM_END),
    }
    # The encoder's 2x convolution stride means 100 feature frames per second become 50 positions.
    source_positions = sizes.audio_chunk_seconds * 50
    audio_config: dict[str, Any] = {
        "num_mel_bins": TINY_AUDIO_MEL_BINS,
        "encoder_layers": sizes.audio_layers,
        "encoder_attention_heads": sizes.audio_heads,
        "encoder_ffn_dim": sizes.audio_hidden_size * 2,
        "d_model": sizes.audio_hidden_size,
        "max_source_positions": source_positions,
    }
    audio_token_id = tokenizer.convert_tokens_to_ids(AUDIO_PLACEHOLDER)
    model: nn.Module
    if arch == "qwen2_audio":
        from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor

        config = Qwen2AudioConfig(
            audio_config={"model_type": "qwen2_audio_encoder", **audio_config},
            text_config={"model_type": "qwen2", **text_config},
            audio_token_index=audio_token_id,
        )
        model = Qwen2AudioForConditionalGeneration._from_config(config, attn_implementation="sdpa")
        processor = Qwen2AudioProcessor(feature_extractor=feature_extractor, tokenizer=tokenizer)
        speech_lm: SpeechLM = Qwen2AudioSpeechLM(model, tokenizer, feature_extractor, processor)
    elif arch == "qwen2_5_omni_thinker":
        from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

        head_dim = sizes.hidden_size // sizes.num_attention_heads
        # mRoPE splits each head's rotary half into temporal/height/width sections.
        quarter = head_dim // 2 // 4
        thinker_config = Qwen2_5OmniThinkerConfig(
            audio_config={**audio_config, "n_window": source_positions, "output_dim": sizes.hidden_size},
            vision_config={
                "depth": 1,
                "hidden_size": 32,
                "intermediate_size": 64,
                "num_heads": 2,
                "out_hidden_size": sizes.hidden_size,
                "fullatt_block_indexes": [0],
            },
            text_config={
                **text_config,
                "rope_parameters": {
                    "rope_type": "default",
                    "rope_theta": 10000.0,
                    "mrope_section": [head_dim // 2 - 2 * quarter, quarter, quarter],
                },
            },
            audio_token_index=audio_token_id,
            image_token_index=tokenizer.convert_tokens_to_ids("<|IMAGE|>"),
            video_token_index=tokenizer.convert_tokens_to_ids("<|VIDEO|>"),
            audio_start_token_id=tokenizer.convert_tokens_to_ids(AUDIO_BOS),
            audio_end_token_id=tokenizer.convert_tokens_to_ids(AUDIO_EOS),
            # get_rope_index reads it on every forward, yet the thinker config does not declare it.
            **{"vision_start_token_id": tokenizer.convert_tokens_to_ids("<|vision_bos|>")},
        )
        model = Qwen2_5OmniThinkerForConditionalGeneration._from_config(
            thinker_config, attn_implementation="sdpa"
        )
        speech_lm = Qwen25OmniThinkerSpeechLM(model, tokenizer, feature_extractor)
    else:
        raise ValueError(f"no tiny build for arch {arch!r}")
    return speech_lm
