"""Inference over dialogues turn by turn, feeding back gold replies or the model's own."""

from __future__ import annotations

import pytest

from ml.core.inference import InferenceItem, run_dialogue_inference
from ml.core.speech.inputs import PriorTurn
from ml.core.speech.model import SpeechLM
from tests.ml.core.samples import PROMPT, voiced_audio

GOLD = ("Gold reply to turn one.", "Gold reply to turn two.")


def dialogue(name: str, turns: int) -> list[InferenceItem]:
    """Return a dialogue's turns as the records give them: each with the gold replies before it."""
    audio = [voiced_audio(0.4 + 0.1 * turn, seed=turn) for turn in range(turns)]
    return [
        InferenceItem(
            f"{name}.t{turn + 1}",
            audio[turn],
            16_000,
            PROMPT,
            tuple(PriorTurn(audio[earlier], GOLD[earlier]) for earlier in range(turn)),
        )
        for turn in range(turns)
    ]


def prompt_text(speech_lm: SpeechLM, item: InferenceItem, replies: tuple[str, ...]) -> str:
    """Return the decoded prompt the model read for a turn fed ``replies``."""
    history = tuple(PriorTurn(turn.audio, reply) for turn, reply in zip(item.history, replies, strict=True))
    example = InferenceItem(item.item_id, item.audio, 16_000, PROMPT, history).speech_example()
    batch = speech_lm.collate([example])
    return str(speech_lm.tokenizer.decode(batch.input_ids[0]))


def test_gold_history_feeds_the_gold_replies(tiny_qwen2_audio: SpeechLM) -> None:
    dialogues = [dialogue("A", 3), dialogue("B", 2)]

    outputs = run_dialogue_inference(tiny_qwen2_audio, dialogues, "gold", max_new_tokens=6, batch_size=2)

    assert [output.item_id for output in outputs] == ["A.t1", "A.t2", "A.t3", "B.t1", "B.t2"]
    assert [output.history_replies for output in outputs[:3]] == [(), GOLD[:1], GOLD]
    third = prompt_text(tiny_qwen2_audio, dialogues[0][2], outputs[2].history_replies)
    assert GOLD[0] in third and GOLD[1] in third


def test_own_history_feeds_the_models_earlier_answers(tiny_qwen2_audio: SpeechLM) -> None:
    dialogues = [dialogue("A", 3), dialogue("B", 1)]
    progress: list[str] = []

    outputs = run_dialogue_inference(
        tiny_qwen2_audio,
        dialogues,
        "own",
        max_new_tokens=8,
        on_progress=lambda fraction, message, metrics: progress.append(message),
    )

    first, second, third, lone = outputs
    assert lone.item_id == "B.t1" and lone.history_replies == ()
    assert first.spoken_reply(), "the tiny model answered something to feed back"
    assert second.history_replies == (first.spoken_reply(),)
    assert third.history_replies == (first.spoken_reply(), second.spoken_reply())
    prompt = prompt_text(tiny_qwen2_audio, dialogues[0][2], third.history_replies)
    assert second.spoken_reply() in prompt
    assert GOLD[1] not in prompt
    assert progress[-1] == "4/4 turns (turn 3)"


def test_a_dialogue_with_a_missing_turn_is_refused(tiny_qwen2_audio: SpeechLM) -> None:
    with pytest.raises(ValueError, match="holds 2 earlier turns, not 1"):
        run_dialogue_inference(tiny_qwen2_audio, [[dialogue("A", 3)[0], dialogue("A", 3)[2]]], "own")
    with pytest.raises(ValueError, match="history mode"):
        run_dialogue_inference(tiny_qwen2_audio, [dialogue("A", 1)], "oracle")


def test_cancelling_returns_the_turns_answered_so_far(tiny_qwen2_audio: SpeechLM) -> None:
    calls: list[int] = []

    def cancel_after_first_turns() -> bool:
        calls.append(1)
        return len(calls) > 1

    outputs = run_dialogue_inference(
        tiny_qwen2_audio,
        [dialogue("A", 2), dialogue("B", 2)],
        "own",
        max_new_tokens=4,
        should_cancel=cancel_after_first_turns,
        batch_size=2,
    )
    assert [output.item_id for output in outputs] == ["A.t1", "B.t1"]
