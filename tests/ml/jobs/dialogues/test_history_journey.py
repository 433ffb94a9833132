"""Journey: a dialogue answered with gold history and with its own history is judged with exactly
the history each output was produced with (the inference job stores it; the judge reads it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evaluation.judging.dialogues.context import histories_for
from evaluation.judging.dialogues.history import history_lines
from evaluation.judging.rubrics import RESPONSE_CONTENT
from evaluation.outputs.models import ModelOutput, System
from ml.jobs.launch import INFERENCE_JOB, start_ml_job
from tests.ml.jobs.dialogues.support import gold_reply, recorded_dialogue
from tests.ml.jobs.support import finished
from webapp.jobs import JobStatus
from webapp.lib.output_format import parse_output
from webapp.models import User
from webapp.roles import Role

pytestmark = [pytest.mark.usefixtures("ml_storage"), pytest.mark.slow]


def _answer(admin: User, system_name: str, history: str) -> System:
    job = finished(
        start_ml_job(
            INFERENCE_JOB,
            started_by=admin,
            parameters={
                "start_from": "tiny",
                "system_name": system_name,
                "benchmark_version": "echoeval-v1",
                "max_new_tokens": 8,
                "batch_size": 2,
                "device": "cpu",
                "dtype": "float32",
                "dialogue_history": history,
            },
            splits=["test"],
        )
    )
    assert job.status == JobStatus.SUCCEEDED, job.error
    return System.objects.get(name=system_name)


def _turns(system: System) -> dict[int, ModelOutput]:
    outputs = ModelOutput.objects.filter(system=system).select_related("item")
    return {output.item.turn or 0: output for output in outputs}


def _spoken(output: ModelOutput) -> str:
    """What the user heard of an output (as inference feeds it back): its response, else its text."""
    return parse_output(output.raw_text).span_text("response").strip() or output.raw_text.strip()


def test_gold_and_own_history_outputs_are_judged_with_the_history_they_heard(
    db: None, make_user: Callable[..., User]
) -> None:
    # given a three-turn test dialogue with gold on every turn, answered once hearing the gold
    # replies and once hearing the model's own
    recorded_dialogue("DL-1", turns=3, split="test")
    admin = make_user(Role.ADMIN)
    gold_heard = _turns(_answer(admin, "EchoChat gold-heard", "gold"))
    own_heard = _turns(_answer(admin, "EchoChat own-heard", "own"))

    # then each output stores the history it was produced with
    assert gold_heard[3].history == {
        "source": "gold",
        "replies": [{"turn": 1, "reply": gold_reply("DL-1", 1)}, {"turn": 2, "reply": gold_reply("DL-1", 2)}],
    }
    assert own_heard[3].history == {
        "source": "own",
        "replies": [{"turn": 1, "reply": _spoken(own_heard[1])}, {"turn": 2, "reply": _spoken(own_heard[2])}],
    }
    assert gold_heard[1].history == {"source": "gold", "replies": []}

    # when the judge builds the turn-3 prompts
    histories = histories_for([gold_heard[3], own_heard[3]])
    gold_prompt = "\n".join(history_lines(RESPONSE_CONTENT, histories[gold_heard[3].pk]))
    own_prompt = "\n".join(history_lines(RESPONSE_CONTENT, histories[own_heard[3].pk]))

    # then each reads exactly the replies its output heard: the gold-heard output is not judged
    # against its own earlier outputs (which it never heard), the own-heard one is
    for turn in (1, 2):
        gold_line = f"Assistant (the reply the model heard: the gold reply, else the planned one): {gold_reply('DL-1', turn)}"
        assert gold_line in gold_prompt
        own_line = f"Assistant (the judged model's own reply): {_spoken(own_heard[turn]) or '(empty)'}"
        assert own_line in own_prompt
    assert [turn.reply for turn in histories[gold_heard[3].pk].earlier] == [
        gold_reply("DL-1", 1),
        gold_reply("DL-1", 2),
    ]
    assert [turn.reply for turn in histories[own_heard[3].pk].earlier] == [
        _spoken(own_heard[1]),
        _spoken(own_heard[2]),
    ]
