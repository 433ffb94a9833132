"""A judge run over a dialogue's turns against a real local chat server: each turn's prompt carries the
conversation before it, and a changed earlier reply sends the later turns back to the judge."""

from __future__ import annotations

import pytest

from annotation.recording.models import Dialogue, Item
from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import System
from tests.evaluation.judging_support import GOLD_PERCEPTION, GOLD_TOM, jsonl, rubric_judge, stage_of
from tests.factories import DialogueFactory, GoldReferenceFactory
from tests.support.fake_chat_server import RecordedRequest, running_chat_server
from webapp.jobs import run_job
from webapp.models import JobStatus

pytestmark = pytest.mark.usefixtures("media_root")


@pytest.fixture
def dialogue(db: None) -> Dialogue:
    dialogue = DialogueFactory.create(external_id="ED-1", turns=3)
    for item in dialogue.turns.all():
        GoldReferenceFactory.create(
            item=item, perception={**GOLD_PERCEPTION, "emotion": item.target_emotion}, tom=dict(GOLD_TOM)
        )
    return dialogue


@pytest.fixture
def system(db: None) -> System:
    return System.objects.create(name="Omni-X", text_only=True)


def _import(system: System, replies: dict[int, str]) -> None:
    rows = [{"item_id": f"ED-1.t{turn}", "output": reply} for turn, reply in replies.items()]
    report = import_outputs(system, "echoeval-v1", jsonl(*rows), None)
    assert report.imported, report.errors


def _judge(system: System, config: JudgeConfig) -> dict:
    run = start_judge_run(system, "echoeval-v1", config, started_by=None)
    assert run.job is not None
    run_job(run.job.pk)
    run.job.refresh_from_db()
    assert run.job.status == JobStatus.SUCCEEDED, run.job.error
    return run.job.result or {}


def _prompts_of_turn(requests: list[RecordedRequest], turn: int) -> dict[str, str]:
    """Return {stage: user message} of the prompts the judge received for one turn."""
    prompts = {}
    for request in requests:
        assert isinstance(request.json, dict)
        user = request.json["messages"][1]["content"]
        if f"This utterance is turn {turn} of a spoken dialogue." in user:
            prompts[stage_of(request)] = user
    return prompts


def test_each_turn_is_judged_with_the_conversation_before_it(dialogue: Dialogue, system: System) -> None:
    # given: the system answered turns 1 and 3; turn 2 has only its reference reply
    _import(system, {1: "I'm sorry, that is a lot.", 3: "Let's take it one step at a time."})
    turn_two = Item.objects.get(external_id="ED-1.t2")
    config = JudgeConfig.objects.create(name="judge", base_url="http://placeholder", model="judge-model")
    with running_chat_server(rubric_judge()) as server:
        config.base_url = server.base_url
        config.save()
        # when
        result = _judge(system, config)
    # then: every stage of both outputs judged; turn 3's prompts carry turns 1 and 2
    assert (result["to_judge"], result["valid"]) == (6, 6)
    third = _prompts_of_turn(server.chat_requests, 3)
    assert set(third) == {"perception", "reasoning", "response_content"}
    for user in third.values():
        assert "User: Turn 1 of what happened after I lost my job." in user
        assert "Assistant (the judged model's own reply): I'm sorry, that is a lot." in user
        assert f"User: {turn_two.text}" in user
        assert (
            "Assistant (reference reply; the model has no output for this turn): "
            f"{turn_two.reference_reply}" in user
        )
    assert third["response_content"].endswith("Model output:\nLet's take it one step at a time.")
    assert "Reference perception of the user: emotion: fear" in third["reasoning"]
    assert "Reference perception" not in third["response_content"]
    first = _prompts_of_turn(server.chat_requests, 1)
    assert set(first) == {"perception", "reasoning", "response_content"}
    assert all("Conversation so far" not in user for user in first.values())
    assert set(Judgement.objects.in_use().values_list("prompt_version", flat=True)) == {
        "perception-v1+history-v1",
        "reasoning-v2+history-v1",
        "response-content-v1+history-v1",
    }


def test_a_changed_earlier_reply_judges_the_later_turns_again(dialogue: Dialogue, system: System) -> None:
    _import(system, {1: "I'm sorry, that is a lot.", 2: "Fear is natural.", 3: "One step at a time."})
    config = JudgeConfig.objects.create(name="judge", base_url="http://placeholder", model="judge-model")
    with running_chat_server(rubric_judge()) as server:
        config.base_url = server.base_url
        config.save()
        _judge(system, config)
        old_keys = dict(
            Judgement.objects.in_use().filter(output__item__turn=3).values_list("stage", "prompt_key")
        )
        # when: only turn 2's reply changes
        _import(
            system, {1: "I'm sorry, that is a lot.", 2: "Calm down, it's fine.", 3: "One step at a time."}
        )
        # then: turn 1 keeps its judgements; turns 2 and 3 go back to the judge, turn 3 with the new reply
        assert set(Judgement.objects.in_use().values_list("output__item__turn", flat=True)) == {1}
        answered_before = len(server.chat_requests)
        result = _judge(system, config)
    # turn 2's perception and reasoning prompts did not change (free text has neither): the cache
    # answers them; its response and every turn-3 prompt are new and go to the judge
    assert (result["to_judge"], result["valid"], result["cached"]) == (6, 6, 2)
    assert len(server.chat_requests) == answered_before + 4
    third = _prompts_of_turn(server.chat_requests[answered_before:], 3)
    assert all(
        "Assistant (the judged model's own reply): Calm down, it's fine." in user for user in third.values()
    )
    new_keys = dict(
        Judgement.objects.in_use().filter(output__item__turn=3).values_list("stage", "prompt_key")
    )
    assert set(new_keys) == set(old_keys) and all(new_keys[stage] != old_keys[stage] for stage in old_keys)


def test_another_systems_changed_reply_leaves_this_systems_turns_alone(
    dialogue: Dialogue, system: System
) -> None:
    other = System.objects.create(name="Other", text_only=True)
    _import(system, {1: "Mine.", 2: "Mine again."})
    _import(other, {1: "Theirs."})
    config = JudgeConfig.objects.create(name="judge", base_url="http://placeholder", model="judge-model")
    with running_chat_server(rubric_judge()) as server:
        config.base_url = server.base_url
        config.save()
        _judge(system, config)
        _judge(other, config)
    _import(other, {1: "Theirs, changed."})
    assert Judgement.objects.in_use().filter(output__system=system).count() == 6
    assert Judgement.objects.in_use().filter(output__system=other).count() == 0


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # turn 1 newly answered: turns 2-3 were judged after the reference reply
        (
            {2: "Fear is natural.", 3: "One step at a time."},
            {1: "New.", 2: "Fear is natural.", 3: "One step at a time."},
        ),
        # turn 1's answer withdrawn: turns 2-3 were judged after the system's own reply
        (
            {1: "Mine.", 2: "Fear is natural.", 3: "One step at a time."},
            {2: "Fear is natural.", 3: "One step at a time."},
        ),
    ],
)
def test_a_new_or_withdrawn_earlier_reply_also_judges_the_later_turns_again(
    dialogue: Dialogue, system: System, before: dict[int, str], after: dict[int, str]
) -> None:
    _import(system, before)
    config = JudgeConfig.objects.create(name="judge", base_url="http://placeholder", model="judge-model")
    with running_chat_server(rubric_judge()) as server:
        config.base_url = server.base_url
        config.save()
        _judge(system, config)
    assert set(Judgement.objects.in_use().values_list("output__item__turn", flat=True)) >= {2, 3}

    _import(system, after)

    assert not Judgement.objects.in_use().filter(output__item__turn__in=[2, 3]).exists()
