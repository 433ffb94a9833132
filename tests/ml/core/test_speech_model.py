"""The SpeechLM adapters on tiny random models: inputs, labels, spans, save/reload, generation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor

from ml.core.speech.adapters import Qwen25OmniThinkerSpeechLM
from ml.core.speech.inputs import IGNORE_INDEX, SpeechExample, completion_logprobs, resample
from ml.core.speech.loading import load_speech_lm, split_s3_uri
from ml.core.speech.model import SpeechLM
from tests.ml.core.samples import PROMPT, TARGET, voiced_audio
from webapp.lib.output_format import parse_output


def test_tiny_qwen2_audio_uses_the_real_model_and_processor_classes(tiny_qwen2_audio: SpeechLM) -> None:
    assert isinstance(tiny_qwen2_audio.model, Qwen2AudioForConditionalGeneration)
    assert isinstance(tiny_qwen2_audio.processor, Qwen2AudioProcessor)
    assert tiny_qwen2_audio.num_decoder_layers == 2


def test_labels_cover_exactly_the_target_and_end_of_turn(tiny_qwen2_audio: SpeechLM) -> None:
    batch = tiny_qwen2_audio.build_inputs(voiced_audio(1.0), PROMPT, TARGET)
    labels = batch.labels
    assert labels is not None

    start = batch.target_starts[0]
    assert (labels[0, :start] == IGNORE_INDEX).all()
    assert torch.equal(labels[0, start:], batch.input_ids[0, start:])
    assert tiny_qwen2_audio.tokenizer.decode(labels[0, start:-1]) == TARGET
    assert labels[0, -1] == tiny_qwen2_audio.end_of_turn_id


def test_one_second_of_audio_becomes_25_audio_tokens(tiny_qwen2_audio: SpeechLM) -> None:
    # 100 feature frames -> conv stride 2 -> 50 -> pooling stride 2 -> 25 positions.
    batch = tiny_qwen2_audio.build_inputs(voiced_audio(1.0), PROMPT)

    assert int(tiny_qwen2_audio.audio_token_mask(batch.input_ids).sum()) == 25


def test_span_token_ranges_decode_to_the_span_text(tiny_qwen2_audio: SpeechLM) -> None:
    batch = tiny_qwen2_audio.collate(
        [SpeechExample(voiced_audio(1.0), PROMPT, TARGET), SpeechExample(voiced_audio(0.5), "Hi", TARGET)]
    )
    parsed = parse_output(TARGET)

    for row, ranges in enumerate(tiny_qwen2_audio.target_span_token_ranges(batch)):
        assert list(ranges) == ["perception", "reasoning", "strategy", "response"]
        for name, (start, end) in ranges.items():
            decoded = tiny_qwen2_audio.tokenizer.decode(batch.input_ids[row, start:end])
            assert decoded.strip() == parsed.spans()[name].text
            assert batch.completion_mask()[row, start:end].all()


def test_left_padding_shifts_target_starts(tiny_qwen2_audio: SpeechLM) -> None:
    examples = [
        SpeechExample(voiced_audio(1.0), PROMPT, TARGET),
        SpeechExample(voiced_audio(0.5), "Hi", TARGET),
    ]
    right = tiny_qwen2_audio.collate(examples)
    left = tiny_qwen2_audio.collate(examples, padding_side="left")

    width = right.input_ids.shape[1]
    lengths = right.attention_mask.sum(dim=1).tolist()
    assert left.target_starts == [
        start + width - length for start, length in zip(right.target_starts, lengths, strict=True)
    ]
    assert left.attention_mask[1, : width - lengths[1]].sum() == 0


def test_completion_logprobs_agree_with_the_loss(tiny_qwen2_audio: SpeechLM) -> None:
    batch = tiny_qwen2_audio.build_inputs(voiced_audio(1.0), PROMPT, TARGET)
    with torch.no_grad():
        output = tiny_qwen2_audio.forward(batch)
    assert output.loss is not None and batch.labels is not None

    logprobs = completion_logprobs(output.logits, batch.labels)

    mask = batch.completion_mask()
    assert float(-logprobs[mask].mean()) == pytest.approx(float(output.loss), rel=1e-5)
    assert (logprobs[~mask] == 0).all()


def test_save_and_reload_round_trips_weights_and_preprocessing(
    tiny_qwen2_audio: SpeechLM, tmp_path: Path
) -> None:
    audio = voiced_audio(1.0)
    batch = tiny_qwen2_audio.build_inputs(audio, PROMPT, TARGET)
    before = tiny_qwen2_audio.forward(batch).logits
    text_before = tiny_qwen2_audio.generate(audio, PROMPT, max_new_tokens=6)

    tiny_qwen2_audio.save_pretrained(tmp_path)
    reloaded = load_speech_lm(tmp_path)

    assert type(reloaded) is type(tiny_qwen2_audio)
    reloaded_batch = reloaded.build_inputs(audio, PROMPT, TARGET)
    assert torch.equal(reloaded_batch.input_ids, batch.input_ids)
    assert torch.equal(reloaded_batch.model_inputs["input_features"], batch.model_inputs["input_features"])
    assert torch.allclose(reloaded.forward(reloaded_batch).logits, before, atol=1e-6)
    assert reloaded.generate(audio, PROMPT, max_new_tokens=6) == text_before


def test_generate_batch_returns_samples_per_item(tiny_qwen2_audio: SpeechLM) -> None:
    torch.manual_seed(0)
    texts = tiny_qwen2_audio.generate_batch(
        [(voiced_audio(1.0), PROMPT), (voiced_audio(0.6), "Hi")],
        max_new_tokens=4,
        do_sample=True,
        num_return_sequences=2,
    )

    assert [len(samples) for samples in texts] == [2, 2]
    assert all(isinstance(text, str) for samples in texts for text in samples)


def test_omni_thinker_adapter_trains_and_round_trips(tiny_omni_thinker: SpeechLM, tmp_path: Path) -> None:
    batch = tiny_omni_thinker.build_inputs(voiced_audio(1.0), PROMPT, TARGET)
    output = tiny_omni_thinker.forward(batch)
    assert output.loss is not None
    output.loss.backward()

    ranges = tiny_omni_thinker.target_span_token_ranges(batch)[0]
    start, end = ranges["perception"]
    assert tiny_omni_thinker.tokenizer.decode(batch.input_ids[0, start:end]) == parse_output(
        TARGET
    ).span_text("perception")
    assert int(tiny_omni_thinker.audio_token_mask(batch.input_ids).sum()) == 25

    tiny_omni_thinker.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "qwen2_5_omni_thinker"
    reloaded = load_speech_lm(tmp_path)
    assert isinstance(reloaded, Qwen25OmniThinkerSpeechLM)
    assert torch.allclose(reloaded.forward(batch).logits, output.logits.detach(), atol=1e-6)


def test_unknown_model_type_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))

    with pytest.raises(ValueError, match="no speech LM adapter for model_type 'llama'"):
        load_speech_lm(tmp_path)


def test_s3_uris_split_into_bucket_and_prefix() -> None:
    assert split_s3_uri("s3://models/echochat/sft-3/") == ("models", "echochat/sft-3")
    with pytest.raises(ValueError):
        split_s3_uri("/local/path")


def test_resample_keeps_duration_and_mixes_stereo_to_mono() -> None:
    stereo = np.stack([np.ones(8000), np.zeros(8000)]).astype(np.float32)

    mono = resample(stereo, 8000)

    assert mono.shape == (16000,)
    assert mono.dtype == np.float32
    assert float(np.median(mono)) == pytest.approx(0.5, abs=1e-3)
