"""The local-model consistency check: a transformers audio classifier saved in a folder, loaded
offline, run on real eSpeak NG speech (22.05 kHz, resampled to the model's 16 kHz)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2ForSequenceClassification

from annotation.audio.synthesis import synthesize, to_wav_bytes
from ml.builder.config import BuildConfig, ConfigProblem
from ml.builder.logic.local_classifier import LocalModelClassifier, studio_emotion

# IEMOCAP-style labels, as many speech-emotion models name them; "xxx" names no studio emotion.
LABELS = ["neu", "hap", "ang", "sad", "xxx"]


def tiny_classifier(folder: Path, leaning: str) -> Path:
    """Save a tiny random wav2vec2 classifier whose bias leans hard towards the label `leaning`."""
    torch.manual_seed(0)
    config = Wav2Vec2Config(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(8, 8),
        conv_stride=(5, 4),
        conv_kernel=(10, 4),
        num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2,
        classifier_proj_size=8,
        id2label=dict(enumerate(LABELS)),
        label2id={label: index for index, label in enumerate(LABELS)},
    )
    model = Wav2Vec2ForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.fill_(-4.0)
        model.classifier.bias[LABELS.index(leaning)] = 4.0
    model.save_pretrained(folder)
    Wav2Vec2FeatureExtractor(sampling_rate=16_000).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def speech() -> bytes:
    spoken = synthesize("I keep thinking about it, and honestly it feels heavy today.")
    assert spoken.sample_rate != 16_000  # the classifier must resample
    return to_wav_bytes(spoken.samples, spoken.sample_rate)


def test_a_model_leaning_sad_hears_sad_speech_as_consistent_and_happy_not(
    tmp_path: Path, speech: bytes
) -> None:
    classifier = LocalModelClassifier(tiny_classifier(tmp_path / "sad-model", "sad"), device="cpu")

    sad, happy = classifier.verdict(speech, "sad"), classifier.verdict(speech, "happy")

    assert (sad.predicted, sad.consistent) == ("sad", True)
    assert sad.confidence > 0.9 and sad.method == "local-model:sad-model"
    assert (happy.expected, happy.predicted, happy.consistent) == ("happy", "sad", False)
    # the unmapped label's probability is left out; the studio emotions' add up to the rest
    assert set(sad.scores) == {"neutral", "happy", "angry", "sad"} and sum(sad.scores.values()) < 1.0


def test_labels_map_to_the_studio_emotions() -> None:
    assert [studio_emotion(label) for label in ("HAP", "joy", "Anger", "sad", "xxx", "")] == [
        "happy",
        "happy",
        "angry",
        "sad",
        "",
        "",
    ]


def test_a_folder_without_a_model_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="holds no model"):
        LocalModelClassifier(tmp_path)


def test_the_local_method_needs_a_model_folder() -> None:
    endpoints = [{"base_url": "http://127.0.0.1:9/v1", "model": "m"}]
    with pytest.raises(ConfigProblem, match="consistency_model_path"):
        BuildConfig.from_json({"endpoints": endpoints, "consistency_method": "local"})
    config = BuildConfig.from_json(
        {
            "endpoints": endpoints,
            "consistency_method": "local",
            "consistency_model_path": "/models/emotion2vec",
        }
    )
    assert config.consistency_model_path == "/models/emotion2vec"
