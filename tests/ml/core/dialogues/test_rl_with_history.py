"""RL on a dialogue turn's record: rollouts and their update read the turn's history."""

from __future__ import annotations

import copy
import math

from ml.core.config import LoraSettings, RlConfig
from ml.core.rl.grpo import rl_update
from ml.core.rl.rollouts import RlPrompt, RolloutGroup, StageScores
from ml.core.rl.training import prepare_policy
from ml.core.speech.model import SpeechLM
from ml.core.training_inputs import inference_items, train_rl_on_records
from ml.core.training_records import HistoryTurn, RecordAudio, TrainingRecord
from tests.ml.core.samples import PROMPT, TARGET, voiced_audio
from webapp.lib.output_format import ParsedOutput

EARLIER_REPLY = "That sounds really hard."
LORA = LoraSettings(rank=4, alpha=8, dropout=0.0)


def dialogue_turn_row() -> RecordAudio:
    record = TrainingRecord(
        item_id="D-1.t2",
        audio_path="",
        scenario="chitchat",
        emotion="sad",
        perception="Low pitch and a trembling voice: sad.",
        reasoning="Context: the user lost their job.",
        strategies=("Emotional validation",),
        speech_style="comforting",
        response="I am here with you.",
        prompt=PROMPT,
        dialogue_id="D-1",
        turn=2,
        history=(HistoryTurn(turn=1, text="I lost my job.", reply=EARLIER_REPLY),),
    )
    return RecordAudio(record, voiced_audio(0.8), 16_000, ((voiced_audio(0.5, 140.0, seed=3), 16_000),))


def test_a_multi_turn_record_becomes_a_prompt_with_its_history() -> None:
    (prompt,) = inference_items([dialogue_turn_row()])

    assert [turn.reply for turn in prompt.history] == [EARLIER_REPLY]
    assert prompt.history[0].audio.shape == (8000,)


def test_the_rl_update_scores_completions_after_the_history(tiny_qwen2_audio: SpeechLM) -> None:
    reference = copy.deepcopy(tiny_qwen2_audio)
    prepare_policy(tiny_qwen2_audio, reference, RlConfig(lora=LORA))
    (with_history,) = inference_items([dialogue_turn_row()])
    alone = RlPrompt(with_history.item_id, with_history.audio, 16_000, PROMPT)
    completions = (TARGET, TARGET.replace("hard", "sad"))

    def flat(item_id: str, parsed: ParsedOutput) -> StageScores:
        return StageScores(0.5, 0.5, 0.5, 2.5, 0.5)

    results = [
        rl_update(tiny_qwen2_audio, reference, [RolloutGroup(prompt, completions)], flat, RlConfig(lora=LORA))
        for prompt in (with_history, alone)
    ]

    prompt_lengths = [
        tiny_qwen2_audio.collate([prompt.speech_example()]).input_ids.shape[1]
        for prompt in (with_history, alone)
    ]
    shift = prompt_lengths[0] - prompt_lengths[1]
    assert shift > 25  # the earlier turn's 12 audio tokens, its reply and the chat markup
    spans_with, spans_alone = results[0].token_spans[0][0], results[1].token_spans[0][0]
    assert {name: (start - shift, end - shift) for name, (start, end) in spans_with.items()} == spans_alone
    decoded = tiny_qwen2_audio.tokenizer.decode(
        tiny_qwen2_audio.collate([with_history.speech_example()]).input_ids[0]
    )
    assert EARLIER_REPLY in decoded


def test_one_rl_step_runs_on_a_multi_turn_record(tiny_qwen2_audio: SpeechLM) -> None:
    config = RlConfig(
        max_steps=1, group_size=2, prompts_per_step=1, max_new_tokens=8, lora=LORA, device="cpu"
    )

    result = train_rl_on_records(tiny_qwen2_audio, [dialogue_turn_row()], config)

    assert result.steps_completed == 1
    metrics = result.last_metrics()
    assert math.isfinite(metrics["loss"]) and metrics["completion_tokens"] > 0
