"""Tiny random speech LMs of the real model classes, built offline, for tests and benchmarks.

``build_tiny_speech_lm`` builds a randomly initialised model with a locally trained tokenizer, so
nothing is downloaded; ``build_tiny_tokenizer`` is also the reward model's default tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ml.core.speech.adapters import Qwen2AudioSpeechLM, Qwen25OmniThinkerSpeechLM
from ml.core.speech.inputs import (
    AUDIO_BOS,
    AUDIO_EOS,
    AUDIO_PLACEHOLDER,
    END_OF_TEXT,
    IM_END,
    IM_START,
    SAMPLE_RATE,
)
from ml.core.speech.model import SpeechLM
from webapp.lib.output_format import OUTPUT_TAGS

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
