"""RL stage scores s1-s3 from the rubric judge, over real HTTP to a local chat server (no database)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ml.core.judge_scoring import JudgeGold, JudgeStageScorer, JudgeUnavailable
from tests.evaluation.judging_support import rubric_judge, stage_of
from tests.ml.jobs.samples import GOLD_PERCEPTION, GOLD_TOM
from tests.support.fake_chat_server import (
    FakeChatServer,
    RecordedRequest,
    Reply,
    chat_reply,
    running_chat_server,
    status_reply,
)
from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient
from webapp.lib.output_format import (
    ParsedOutput,
    parse_output,
    render_output,
    render_reasoning,
    render_strategy,
)


def rollout(
    perception: str = "Sad and lonely.", strategies: tuple[str, ...] = ("Emotional validation",)
) -> str:
    return render_output(
        perception,
        render_reasoning("alone", "company", "be heard", "none"),
        render_strategy(list(strategies), "comforting"),
        "I am here.",
    )


def scorer_for(server: FakeChatServer, scenario: str = "implicit") -> JudgeStageScorer:
    client = JudgeClient(ChatJudgeConfig(base_url=server.base_url, model="judge", max_retries=0))
    return JudgeStageScorer(client, {"EE-1": JudgeGold("I ate alone.", scenario, GOLD_PERCEPTION, GOLD_TOM)})


def scored(scorer: JudgeStageScorer, parsed: ParsedOutput) -> tuple[float, float, float]:
    scores = scorer("EE-1", parsed)
    assert scores is not None, "the judge's answers were usable"
    return scores


@pytest.fixture
def judge() -> Iterator[FakeChatServer]:
    with running_chat_server(rubric_judge()) as server:
        yield server


def test_s2_is_the_mental_state_and_s3_the_strategy_part_of_the_reasoning_judgement(
    judge: FakeChatServer,
) -> None:
    s1, s2, s3 = scored(scorer_for(judge), parse_output(rollout()))
    # perception 8/10; reasoning sub-scores context 2, latent need 1, core demand 2, constraints 1
    # (6 of 7) and strategy 2 (of 3)
    assert (s1, s2, s3) == (0.8, pytest.approx(6 / 7), pytest.approx(2 / 3))
    assert {stage_of(request) for request in judge.chat_requests} == {"perception", "reasoning"}


def test_a_not_recommended_strategy_zeroes_s3_and_leaves_s2_alone(judge: FakeChatServer) -> None:
    _, s2, s3 = scored(scorer_for(judge), parse_output(rollout(strategies=("Information",))))
    # the app's own flag (cap 6 of 10: 4 points off the strategy's 3) even though the judge raised none
    assert (s2, s3) == (pytest.approx(6 / 7), 0.0)


def test_no_overlap_with_the_recommended_strategies_caps_s3_at_one_of_three(judge: FakeChatServer) -> None:
    _, s2, s3 = scored(scorer_for(judge), parse_output(rollout(strategies=("Cognitive reframing",))))
    # cap 8 of 10: 2 points off the strategy's 3, so the judge's 2 becomes 1
    assert (s2, s3) == (pytest.approx(6 / 7), pytest.approx(1 / 3))


def test_emotion_shift_items_are_judged_on_the_shift_rubric(judge: FakeChatServer) -> None:
    s1, _, _ = scored(scorer_for(judge, scenario="emotion-shift"), parse_output(rollout()))
    assert s1 == 0.7
    assert "shift_perception" in {stage_of(request) for request in judge.chat_requests}


def test_an_empty_span_scores_zero_without_asking_the_judge(judge: FakeChatServer) -> None:
    scorer = scorer_for(judge)
    s1, s2, _ = scored(scorer, parse_output("<think><reasoning>Context: alone</reasoning></think>I am here."))
    # reasoning lacks latent need, core demand and strategies: missing mental state (cap 1 of 10: 9 points
    # off the mental state's 7) leave s2 at 0
    assert (s1, s2) == (0.0, 0.0)
    assert [stage_of(request) for request in judge.chat_requests] == ["reasoning"]
    assert scorer.counts.skipped_empty == 1


def test_a_missing_strategy_zeroes_s3_and_leaves_s2_alone(judge: FakeChatServer) -> None:
    _, s2, s3 = scored(scorer_for(judge), parse_output(rollout(strategies=())))
    # the app's missing_strategy flag (cap 1: 9 points off the strategy's 3) is about s3 only;
    # the mental state keeps the judge's 6 of 7, so gate g2 stays open
    assert (s2, s3) == (pytest.approx(6 / 7), 0.0)


def test_an_unusable_answer_is_no_score_and_is_counted() -> None:
    with running_chat_server(lambda request: chat_reply("I cannot grade this.")) as server:
        scorer = scorer_for(server)
        assert scorer("EE-1", parse_output(rollout())) is None
    assert (scorer.counts.judge_errors, scorer.counts.failed_rollouts) == (2, 1)


def test_one_unusable_stage_answer_leaves_the_whole_rollout_unscored() -> None:
    good = rubric_judge()

    def reply(request: RecordedRequest) -> Reply:
        return chat_reply("not JSON") if stage_of(request) == "perception" else good(request)

    with running_chat_server(reply) as server:
        scorer = scorer_for(server)
        assert scorer("EE-1", parse_output(rollout())) is None
    assert (scorer.counts.judge_errors, scorer.counts.failed_rollouts) == (1, 1)


def test_a_judge_that_does_not_answer_stops_the_run() -> None:
    with running_chat_server(lambda request: status_reply(503)) as server, pytest.raises(JudgeUnavailable):
        scorer_for(server)("EE-1", parse_output(rollout()))


def test_a_dialogue_turn_is_judged_with_its_history(judge: FakeChatServer) -> None:
    from ml.core.training_inputs import judged_history
    from ml.core.training_records import HistoryTurn, TrainingRecord

    record = TrainingRecord(
        item_id="ED-1.t2",
        audio_path="",
        scenario="implicit",
        emotion="sad",
        perception="",
        reasoning="",
        strategies=(),
        speech_style="comforting",
        response="",
        text="And nobody called me back.",
        dialogue_id="ED-1",
        turn=2,
        history=(HistoryTurn(1, "They let me go this morning.", reply="That is a real shock."),),
    )
    history = judged_history(record)
    client = JudgeClient(ChatJudgeConfig(base_url=judge.base_url, model="judge", max_retries=0))
    gold = JudgeGold(record.text, "implicit", GOLD_PERCEPTION, GOLD_TOM, history=history)

    JudgeStageScorer(client, {"ED-1.t2": gold})("ED-1.t2", parse_output(rollout()))

    prompts = [str(request) for request in judge.chat_requests]
    assert len(prompts) == 2
    assert all("turn 2 of a spoken dialogue" in prompt for prompt in prompts)
    assert all(
        "They let me go this morning." in prompt and "That is a real shock." in prompt for prompt in prompts
    )
    assert judged_history(record.__class__(**{**record.__dict__, "turn": 0, "history": ()})) is None
