"""One small interface over the transformers speech LLMs EchoChat is trained from.

``SpeechLM`` hides what differs between models (chat template, how audio becomes placeholder
tokens, where the language model sits, what to save) behind the few operations training,
reward scoring and inference need: build a batch with labels masked to the target, run a
forward pass, generate, and locate audio tokens and output-format spans in ``input_ids``.

The adapters for real models live in ``ml.core.speech.adapters``, registered by the
``model_type`` of the checkpoint's config.json with ``register_speech_lm``; loading from a
folder or ``s3://`` is ``ml.core.speech.loading``; random tiny models for tests are
``ml.core.speech.tiny``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import torch
from torch import nn

from ml.core.config import LoraSettings
from ml.core.speech.inputs import (
    END_OF_TEXT,
    IGNORE_INDEX,
    IM_END,
    SAMPLE_RATE,
    EncodedPrompt,
    SpeechBatch,
    SpeechExample,
    SpeechLMOutput,
    causal_lm_loss,
    checked_audio,
    resample,
)
from webapp.lib.output_format import SpanName, parse_output, token_spans


class SpeechLM(ABC):
    """A speech LLM with its tokenizer and feature extractor; see the module docstring."""

    arch: ClassVar[str]
    default_system_prompt: ClassVar[str]
    # Module name (suffix) of the audio-to-text projector, kept trainable under LoRA.
    projector_module: ClassVar[str]
    # The audio encoder's module path (trained in full by LoRA's ``train_audio_encoder``).
    encoder_module: ClassVar[str] = "audio_tower"

    def __init__(
        self, model: nn.Module, tokenizer: Any, feature_extractor: Any, processor: Any = None
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.feature_extractor = feature_extractor
        self.processor = processor
        self.system_prompt = self.default_system_prompt
        self.lora: LoraSettings | None = None
        # Set by training with bf16 weights: forwards and generation run under this autocast dtype.
        self.autocast_dtype: torch.dtype | None = None

    def compute_context(self) -> AbstractContextManager[object]:
        """Return the autocast context forwards run in (none unless ``autocast_dtype`` is set)."""
        if self.autocast_dtype is None:
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)

    # --- adapter hooks -------------------------------------------------------------------

    @abstractmethod
    def render_prompt(self, prompt: str, replies: Sequence[str] = ()) -> str:
        """Return the chat-formatted conversation ending where the assistant's answer begins.

        Each of ``replies`` is one earlier exchange: a user turn with one audio placeholder, then
        that reply as the assistant's turn; the current user turn (one audio placeholder and the
        instruction) comes last, so placeholders appear in the order of the audio passed to
        ``encode_prompt``.
        """

    @abstractmethod
    def encode_prompt(self, audios: Sequence[np.ndarray], rendered_prompt: str) -> EncodedPrompt:
        """Return the prompt's token ids (each audio placeholder expanded, in order) and the
        features of every audio (one row each)."""

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

    def audio_features(self, audio: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Return Whisper features padded to the extractor's chunk, their mask, and the number
        of audio tokens the encoder produces (the formula both Qwen processors use)."""
        samples = checked_audio(audio)
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
            rendered = self.render_prompt(example.prompt, [turn.reply for turn in example.history])
            audios = [*(resample(turn.audio, turn.sample_rate) for turn in example.history), example.audio]
            encoded = self.encode_prompt(audios, rendered)
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
        with self.compute_context():
            outputs = self.model(**inputs, use_cache=False, **model_kwargs)
        labels = batch.labels
        loss = causal_lm_loss(outputs.logits, labels) if labels is not None else None
        return SpeechLMOutput(
            logits=outputs.logits, loss=loss, attentions=getattr(outputs, "attentions", None)
        )

    def audio_token_mask(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Return a bool mask of the positions holding audio embeddings (every turn's)."""
        return input_ids == self.audio_token_id

    def current_audio_mask(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Return a bool mask of the current turn's audio positions: each row's last run of audio
        tokens (a history turn's audio ends at its own audio-end token, so runs never merge).
        Single-turn rows have one run, so this equals ``audio_token_mask``."""
        audio = self.audio_token_mask(input_ids)
        mask = torch.zeros_like(audio)
        for row in range(audio.shape[0]):
            positions = audio[row].nonzero().flatten().tolist()
            if not positions:
                continue
            end = begin = positions[-1]
            while begin > 0 and bool(audio[row, begin - 1]):
                begin -= 1
            mask[row, begin : end + 1] = True
        return mask

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
        items: Sequence[tuple[np.ndarray, str] | SpeechExample],
        max_new_tokens: int = 512,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        num_return_sequences: int = 1,
    ) -> list[list[str]]:
        """Return ``num_return_sequences`` decoded completions for each (audio, prompt) item, or
        each example (with its dialogue history; targets are ignored)."""
        examples = [
            SpeechExample(item.audio, item.prompt, history=item.history)
            if isinstance(item, SpeechExample)
            else SpeechExample(*item)
            for item in items
        ]
        batch = self.collate(examples, padding_side="left")
        batch = batch.to(self.device)
        sampling: dict[str, Any] = {"do_sample": do_sample}
        if do_sample:
            sampling.update(temperature=temperature, top_p=top_p)
        was_training = self.model.training
        self.model.eval()
        try:
            with self.compute_context():
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
        """Wrap the model with LoRA adapters on the language model; the projector and, with
        ``train_audio_encoder``, the audio encoder are trained in full, anything else is frozen."""
        from peft import LoraConfig, get_peft_model

        targets = "|".join(settings.target_modules)
        trained: list[str] = []
        if settings.train_audio_encoder:
            trained.append(self.encoder_module)
        # A projector inside the encoder (Qwen2.5-Omni's audio_tower.proj) is trained with it.
        if settings.train_audio_projector and not (
            settings.train_audio_encoder and self.projector_module.startswith(self.encoder_module + ".")
        ):
            trained.append(self.projector_module)
        lora_config = LoraConfig(
            r=settings.rank,
            lora_alpha=settings.alpha,
            lora_dropout=settings.dropout,
            # A regex, so the audio encoder's same-named projections stay untouched.
            target_modules=rf".*language_model\.layers\.\d+\..*\.({targets})",
            modules_to_save=trained or None,
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
