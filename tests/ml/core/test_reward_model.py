"""The response reward model on a tiny random Qwen2.5-Omni thinker: score ranges, appendix D.1 data,
full fine-tuning, save/load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from annotation.audio.tts import speak_in_style
from ml.core.config import RewardModelConfig, RewardTrainingConfig
from ml.core.reward.checkpoint import REWARD_MODEL_TYPE, load_reward_model, save_reward_model
from ml.core.reward.ladder import (
    RewardExample,
    RewardSourceItem,
    build_reward_training_examples,
    clashing_speech_style,
    fitting_speech_style,
)
from ml.core.reward.model import RewardInput, RewardModel, build_reward_model
from ml.core.reward.scoring import UserTurn, response_reward_scorer, score_responses
from ml.core.reward.training import evaluate_reward_model, train_reward_model
from ml.core.speech.inputs import SAMPLE_RATE
from tests.ml.core.samples import voiced_audio
from webapp.lib.output_format import SPEECH_STYLES, parse_output, render_output, render_strategy
from webapp.lib.vocabulary import EMOTIONS, HAPPY, SAD

# A random thinker of the real class, small enough for two shared cores.
TINY = RewardModelConfig(tiny_hidden_size=32, tiny_layers=1, tiny_audio_seconds=2)
SOURCES = [
    RewardSourceItem(
        item_id="sad-1",
        user_audio=voiced_audio(1.0, pitch_hz=120.0, seed=1),
        sample_rate=SAMPLE_RATE,
        emotion="sad",
        reference_response="That sounds really hard. I am here with you.",
        graded_responses={2: "Oh well, these things happen."},
    ),
    RewardSourceItem(
        item_id="happy-1",
        user_audio=voiced_audio(1.0, pitch_hz=240.0, seed=2),
        sample_rate=SAMPLE_RATE,
        emotion="happy",
        reference_response="Congratulations! That is wonderful news, you worked so hard for this.",
    ),
]


@pytest.fixture(scope="module")
def examples() -> list[RewardExample]:
    return build_reward_training_examples(SOURCES, speak_in_style)


@pytest.fixture(scope="module")
def tiny_model() -> RewardModel:
    return build_reward_model(TINY, seed=5)


def test_the_backbone_is_a_qwen25_omni_thinker_and_every_weight_trains(tiny_model: RewardModel) -> None:
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration

    assert isinstance(tiny_model.backbone, Qwen2_5OmniThinkerForConditionalGeneration)
    assert all(parameter.requires_grad for parameter in tiny_model.parameters())
    audio_tower = dict(tiny_model.named_parameters())
    assert any(name.startswith("backbone.model.audio_tower.") for name in audio_tower)


def test_both_audios_reach_the_backbone_as_audio_tokens(tiny_model: RewardModel) -> None:
    batch = tiny_model.prepare(
        [
            RewardInput(voiced_audio(1.0), "sad", "I am here.", voiced_audio(2.0)),
            RewardInput(voiced_audio(0.5), "happy", "Yay!", voiced_audio(0.3)),
        ]
    )
    audio_tokens = (batch["input_ids"] == tiny_model.speech_lm.audio_token_id).sum(dim=1)
    # 25 audio tokens per second, cut at the tiny Whisper chunk of 2 s: 25 + 50, then 12 + 7
    assert audio_tokens.tolist() == [75, 19]
    assert batch["input_features"].shape[0] == 4


def test_the_user_audio_changes_the_scores(tiny_model: RewardModel) -> None:
    low = RewardInput(voiced_audio(1.0, pitch_hz=110.0), "sad", "I am here.", voiced_audio(1.0))
    high = RewardInput(voiced_audio(1.0, pitch_hz=300.0), "sad", "I am here.", voiced_audio(1.0))
    first, second = score_responses(tiny_model, [low, high])
    assert first != second


def test_scores_are_in_range_for_odd_inputs(tiny_model: RewardModel) -> None:
    model = tiny_model
    inputs = [
        RewardInput(voiced_audio(1.0), "sad", "I am here with you.", voiced_audio(0.5)),
        # An emotion the model was not built for, audio at 8 kHz.
        RewardInput(voiced_audio(0.5), "Bored", "Okay.", voiced_audio(0.25), 8000, 8000),
        # No response at all.
        RewardInput(voiced_audio(0.5), "angry", "", np.zeros(0, dtype=np.float32)),
    ]

    scores = score_responses(model, inputs, batch_size=2)

    assert len(scores) == 3
    for score in scores:
        assert 0.0 <= score.content <= 5.0
        assert 0.0 < score.alignment < 1.0


def test_training_examples_follow_the_ladder_with_mismatched_deliveries(
    examples: list[RewardExample],
) -> None:
    sad = [example for example in examples if example.item_id == "sad-1"]

    # Six rungs in the fitting style, plus rungs 5, 3 and 1 again in the clashing one.
    assert [(example.content_grade, example.audio_aligned, example.response_style) for example in sad] == [
        (0.0, True, "comforting"),
        (1.0, True, "comforting"),
        (1.0, False, "excited"),
        (2.0, True, "comforting"),
        (3.0, True, "comforting"),
        (3.0, False, "excited"),
        (4.0, True, "comforting"),
        (5.0, True, "comforting"),
        (5.0, False, "excited"),
    ]
    texts = {example.content_grade: example.inputs.response_text for example in sad}
    assert texts[5.0] == "That sounds really hard. I am here with you."
    assert texts[2.0] == "Oh well, these things happen."
    assert texts[3.0].startswith("That sounds really hard.")
    happy_styles = {ex.response_style for ex in examples if ex.item_id == "happy-1" and ex.audio_aligned}
    assert happy_styles == {"excited"}
    # The synthesizer's 22.05 kHz int16 output arrives as 16 kHz float audio.
    excited, comforting = sad[-1].inputs.response_audio, sad[-2].inputs.response_audio
    assert excited.dtype == np.float32 and np.abs(excited).max() <= 1.0
    assert len(excited) < len(comforting)


@pytest.mark.slow
def test_training_lowers_the_loss_and_ranks_full_marks_above_harmful(examples: list[RewardExample]) -> None:
    model = build_reward_model(TINY)
    config = RewardTrainingConfig(max_steps=80, batch_size=9, learning_rate=5e-3, weight_decay=0.0)

    result = train_reward_model(model, examples, config)

    losses = [entry["loss"] for entry in result.history]
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    for item_id in ("sad-1", "happy-1"):
        pair = [
            ex for ex in examples if ex.item_id == item_id and ex.audio_aligned and ex.content_grade in (0, 5)
        ]
        harmful, full = score_responses(model, [ex.inputs for ex in pair])
        assert full.content > harmful.content + 2.0
    fit = evaluate_reward_model(model, examples)
    assert fit["ranking_accuracy"] > 0.85
    # Chance is 0.5. eSpeak NG varies its audio by a few samples from call to call, so the tiny
    # model's fit does too: 16 to 18 of the 18 examples in repeated runs.
    assert fit["alignment_accuracy"] >= 0.8


def test_progress_and_cancellation(examples: list[RewardExample]) -> None:
    reports: list[tuple[float, str, dict[str, float]]] = []
    checks = iter([False, False, True])

    result = train_reward_model(
        build_reward_model(TINY),
        examples[:4],
        RewardTrainingConfig(max_steps=5, batch_size=2),
        on_progress=lambda *report: reports.append(report),
        should_cancel=lambda: next(checks),
    )

    assert result.cancelled and result.steps_completed == 2 and result.total_steps == 5
    assert [(fraction, message) for fraction, message, _ in reports] == [(0.2, "step 1/5"), (0.4, "step 2/5")]
    assert set(reports[-1][2]) == {"step", "loss", "content_loss", "alignment_loss", "learning_rate"}


def test_save_and_load_round_trip_gives_identical_scores(
    examples: list[RewardExample], tmp_path: Path
) -> None:
    model = build_reward_model(TINY, seed=3)
    train_reward_model(model, examples[:4], RewardTrainingConfig(max_steps=2, batch_size=2))
    inputs = [example.inputs for example in examples[:5]]
    before = score_responses(model, inputs)

    saved = save_reward_model(
        model, tmp_path / "reward", training_config={"max_steps": 2}, dataset_snapshot_ids=["gold-7"]
    )
    loaded = load_reward_model(saved.uri, verify=True)

    assert score_responses(loaded.model, inputs) == before
    assert loaded.metadata.arch == REWARD_MODEL_TYPE
    assert loaded.metadata.dataset_snapshot_ids == ["gold-7"]
    assert set(loaded.metadata.weight_sha256) == {"heads.safetensors", "backbone/model.safetensors"}
    assert loaded.model.config == TINY
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), loaded.model.state_dict().values(), strict=True)
    )


def test_rollouts_are_spoken_in_their_declared_style_before_scoring() -> None:
    spoken: list[tuple[str, str]] = []

    def recording_synthesizer(text: str, style: str) -> tuple[np.ndarray, int]:
        spoken.append((text, style))
        return speak_in_style(text, style)

    scorer = response_reward_scorer(
        build_reward_model(TINY),
        {"sad-1": UserTurn(voiced_audio(1.0), SAMPLE_RATE, "sad")},
        recording_synthesizer,
    )
    declared = render_output(
        "Sad.", "Context: a loss.", render_strategy(["Reassurance"], "comforting"), "I am here."
    )
    undeclared = render_output("Sad.", "Context: a loss.", "Strategies: reassurance", "I am here.")

    score = scorer("sad-1", parse_output(declared))
    scorer("sad-1", parse_output(undeclared))
    empty = scorer("sad-1", parse_output("<think><perception>Sad.</perception></think>"))

    assert 0.0 <= score.content <= 5.0 and 0.0 < score.alignment < 1.0
    assert spoken == [("I am here.", "comforting"), ("I am here.", "calm")]
    assert (empty.content, empty.alignment) == (0.0, 0.0)


def test_every_benchmark_emotion_has_a_fitting_and_a_clashing_speech_style() -> None:
    for emotion in EMOTIONS:
        fitting = fitting_speech_style(emotion)
        assert fitting in SPEECH_STYLES
        assert clashing_speech_style(fitting) in SPEECH_STYLES
        assert clashing_speech_style(fitting) != fitting
    assert (fitting_speech_style(SAD), fitting_speech_style(HAPPY)) == ("comforting", "excited")
