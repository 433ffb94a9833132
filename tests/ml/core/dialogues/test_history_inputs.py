"""Multi-turn model input: earlier turns' audio and replies in the prompt, loss and AAA on the current turn."""

from __future__ import annotations

import math

import pytest
import torch

from ml.core.aaa import collect_audio_attention, measure_rho, perception_query_mask
from ml.core.config import SftConfig
from ml.core.sft import sft_loss
from ml.core.speech.inputs import IGNORE_INDEX, PriorTurn, SpeechBatch, SpeechExample
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import build_tiny_speech_lm
from tests.ml.core.samples import PROMPT, TARGET, voiced_audio

FIRST_REPLY = "That sounds really hard."
SECOND_REPLY = "Take a slow breath with me."
# At 25 audio tokens a second: 0.6 s -> 15, 0.4 s -> 10, 1.0 s -> 25 (the current turn).
HISTORY = (
    PriorTurn(voiced_audio(0.6, 150.0, seed=1), FIRST_REPLY),
    # At 8 kHz: history audio is resampled like the current turn's.
    PriorTurn(voiced_audio(0.2, 210.0, seed=2)[::2].copy(), SECOND_REPLY, sample_rate=8000),
)


@pytest.fixture(params=["qwen2_audio", "qwen2_5_omni_thinker"])
def speech_lm(request: pytest.FixtureRequest) -> SpeechLM:
    return build_tiny_speech_lm(request.param, seed=0)


def dialogue_batch(speech_lm: SpeechLM) -> SpeechBatch:
    return speech_lm.collate([SpeechExample(voiced_audio(1.0), PROMPT, TARGET, HISTORY)])


def audio_runs(mask: torch.Tensor) -> list[tuple[int, int]]:
    """Return the [start, end) ranges of the True runs of a 1-D mask."""
    runs: list[tuple[int, int]] = []
    for position in mask.nonzero().flatten().tolist():
        if runs and runs[-1][1] == position:
            runs[-1] = (runs[-1][0], position + 1)
        else:
            runs.append((position, position + 1))
    return runs


def test_history_turns_come_first_each_with_its_audio_and_reply(speech_lm: SpeechLM) -> None:
    batch = dialogue_batch(speech_lm)
    ids = batch.input_ids[0]
    runs = audio_runs(speech_lm.audio_token_mask(batch.input_ids)[0])

    assert [end - start for start, end in runs] == [15, 5, 25]
    between_first_and_second = speech_lm.tokenizer.decode(ids[runs[0][1] : runs[1][0]])
    between_second_and_current = speech_lm.tokenizer.decode(ids[runs[1][1] : runs[2][0]])
    assert FIRST_REPLY in between_first_and_second
    assert SECOND_REPLY in between_second_and_current
    assert PROMPT not in between_first_and_second  # the instruction belongs to the current turn
    assert PROMPT in speech_lm.tokenizer.decode(ids[runs[2][1] :])
    assert batch.model_inputs["input_features"].shape[0] == 3


def test_labels_cover_only_the_current_target(speech_lm: SpeechLM) -> None:
    batch = dialogue_batch(speech_lm)
    assert batch.labels is not None
    labelled = (batch.labels[0] != IGNORE_INDEX).nonzero().flatten()
    start = batch.target_starts[0]

    assert labelled.tolist() == list(range(start, int(batch.attention_mask[0].sum())))
    target_ids = batch.labels[0][labelled].tolist()
    assert speech_lm.tokenizer.decode(target_ids[:-1]) == TARGET
    assert target_ids[-1] == speech_lm.end_of_turn_id
    # The earlier replies are in the prompt, never in the labels.
    assert SECOND_REPLY in speech_lm.tokenizer.decode(batch.input_ids[0][:start])


def test_current_audio_mask_is_the_last_turns_audio_only(speech_lm: SpeechLM) -> None:
    batch = dialogue_batch(speech_lm)
    all_audio = speech_lm.audio_token_mask(batch.input_ids)[0]
    current = speech_lm.current_audio_mask(batch.input_ids)[0]

    assert audio_runs(current) == [audio_runs(all_audio)[-1]]
    single = speech_lm.build_inputs(voiced_audio(1.0), PROMPT, TARGET)
    assert torch.equal(
        speech_lm.current_audio_mask(single.input_ids), speech_lm.audio_token_mask(single.input_ids)
    )


def test_sft_step_with_history_runs_forward_and_backward_with_aaa_on_the_current_audio(
    speech_lm: SpeechLM,
) -> None:
    torch.manual_seed(0)
    batch = dialogue_batch(speech_lm)
    rho_current = float(measure_rho(speech_lm, batch)[0])
    with torch.no_grad():
        query = perception_query_mask(speech_lm, batch)
        every_audio = speech_lm.audio_token_mask(batch.input_ids)
        with collect_audio_attention(speech_lm, None, query, every_audio) as collector:
            speech_lm.forward(batch)
        rho_every_audio = float(collector.rho())

    speech_lm.model.train()
    metrics = sft_loss(speech_lm, batch, SftConfig(lambda_aaa=0.5))

    assert math.isfinite(metrics["loss"]) and math.isfinite(metrics["aaa"])
    # AAA's rho is the perception span's attention on the current turn's audio, not every turn's.
    assert metrics["rho"] == pytest.approx(rho_current, rel=1e-4)
    assert rho_current < rho_every_audio
    gradients = [p.grad for p in speech_lm.trainable_parameters() if p.grad is not None]
    assert gradients and any(float(g.abs().sum()) > 0 for g in gradients)


def test_generation_reads_the_history(speech_lm: SpeechLM) -> None:
    example = SpeechExample(voiced_audio(1.0), PROMPT, history=HISTORY)
    texts = speech_lm.generate_batch([example, (voiced_audio(0.5), PROMPT)], max_new_tokens=4)
    assert len(texts) == 2 and all(len(row) == 1 and isinstance(row[0], str) for row in texts)
