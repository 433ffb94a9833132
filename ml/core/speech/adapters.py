"""The speech LM adapters, registered by the ``model_type`` of a checkpoint's config.json.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import torch
from torch import nn

from ml.core.speech.inputs import (
    AUDIO_BOS,
    AUDIO_EOS,
    AUDIO_PLACEHOLDER,
    IM_END,
    IM_START,
    SAMPLE_RATE,
    EncodedPrompt,
    checked_audio,
)
from ml.core.speech.model import SPEECH_LM_ADAPTERS, SpeechLM, register_speech_lm


@register_speech_lm("qwen2_audio")
class Qwen2AudioSpeechLM(SpeechLM):
    arch = "qwen2_audio"
    default_system_prompt = "You are a helpful assistant."
    projector_module = "multi_modal_projector"

    def render_prompt(self, prompt: str, replies: Sequence[str] = ()) -> str:
        """Return Qwen2-Audio's chat template: earlier audio turns with their replies, then the
        current audio turn with the instruction (audio numbered across the conversation)."""

        def audio_line(number: int) -> str:
            return f"Audio {number}: {AUDIO_BOS}{AUDIO_PLACEHOLDER}{AUDIO_EOS}\n"

        earlier = "".join(
            f"{IM_START}user\n{audio_line(number)}{IM_END}\n{IM_START}assistant\n{reply}{IM_END}\n"
            for number, reply in enumerate(replies, start=1)
        )
        return (
            f"{IM_START}system\n{self.system_prompt}{IM_END}\n{earlier}"
            f"{IM_START}user\n{audio_line(len(replies) + 1)}{prompt}{IM_END}\n"
            f"{IM_START}assistant\n"
        )

    def encode_prompt(self, audios: Sequence[np.ndarray], rendered_prompt: str) -> EncodedPrompt:
        """Return the real processor's encoding of the prompt and its audio (in order)."""
        encoded = self.processor(
            text=rendered_prompt,
            audio=[checked_audio(audio) for audio in audios],
            sampling_rate=SAMPLE_RATE,
            return_tensors="pt",
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

    def render_prompt(self, prompt: str, replies: Sequence[str] = ()) -> str:
        """Return Qwen2.5-Omni's chat template: earlier audio turns with their replies, then the
        current audio turn with the instruction."""
        audio = f"{AUDIO_BOS}{AUDIO_PLACEHOLDER}{AUDIO_EOS}"
        earlier = "".join(
            f"{IM_START}user\n{audio}{IM_END}\n{IM_START}assistant\n{reply}{IM_END}\n" for reply in replies
        )
        return (
            f"{IM_START}system\n{self.system_prompt}{IM_END}\n{earlier}"
            f"{IM_START}user\n{audio}{prompt}{IM_END}\n"
            f"{IM_START}assistant\n"
        )

    def encode_prompt(self, audios: Sequence[np.ndarray], rendered_prompt: str) -> EncodedPrompt:
        """Expand each placeholder in turn as ``Qwen2_5OmniProcessor`` does, then tokenize.

        Expanded placeholders are swapped for a marker first, so the next ``replace`` finds the
        next unexpanded one.
        """
        marker = "\x00"
        expanded = rendered_prompt
        features: list[torch.Tensor] = []
        masks: list[torch.Tensor] = []
        for audio in audios:
            audio_features, mask, num_tokens = self.audio_features(audio)
            features.append(audio_features)
            masks.append(mask)
            expanded = expanded.replace(AUDIO_PLACEHOLDER, marker * num_tokens, 1)
        expanded = expanded.replace(marker, AUDIO_PLACEHOLDER)
        input_ids = self.tokenizer(expanded, add_special_tokens=False)["input_ids"]
        return EncodedPrompt(
            input_ids=list(input_ids),
            input_features=torch.cat(features),
            feature_attention_mask=torch.cat(masks),
        )

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
