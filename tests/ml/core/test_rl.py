"""GRPO with SDCA on a tiny speech LM: the loss by hand, span-wise advantages, KL, vanilla GRPO."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from ml.core.config import LoraSettings, RlConfig, SdcaConfig
from ml.core.reward.scoring import RewardScore
from ml.core.rl.grpo import dropout_disabled, grpo_token_loss, rl_step, rl_update
from ml.core.rl.heuristic import HeuristicReference, HeuristicScorer, word_f1
from ml.core.rl.rollouts import RlPrompt, RolloutGroup, StageScores, combined_scorer
from ml.core.rl.training import prepare_policy, train_rl
from ml.core.sdca import span_advantages, total_advantages
from ml.core.speech.inputs import SpeechExample, completion_logprobs
from ml.core.speech.model import SpeechLM
from tests.ml.core.samples import PROMPT, voiced_audio
from webapp.lib.output_format import ParsedOutput, parse_output, render_output, render_strategy

LORA = LoraSettings(rank=4, alpha=8, dropout=0.05)
PROMPT_ITEM = RlPrompt(item_id="item-1", audio=voiced_audio(0.8), sample_rate=16_000, prompt=PROMPT)
GOLD = HeuristicReference(
    perception="Low pitch and a trembling voice: sad, strong intensity.",
    reasoning="Context: the user lost their job. Latent need: reassurance.",
    strategies=("Emotional validation", "Reassurance"),
    response="That sounds really hard. I am here with you.",
    speech_style="comforting",
)
SCORER = HeuristicScorer({"item-1": GOLD})


def completion(perception: str, reasoning: str, strategies: list[str], style: str, response: str) -> str:
    return render_output(perception, reasoning, render_strategy(strategies, style), response)


# Four rollouts whose spans are good or bad independently, so each span ranks them differently.
COMPLETIONS = (
    completion(GOLD.perception, GOLD.reasoning, list(GOLD.strategies), "comforting", GOLD.response),
    completion("Happy and excited.", GOLD.reasoning, list(GOLD.strategies), "comforting", GOLD.response),
    completion(GOLD.perception, "Context: a party.", ["Humour"], "comforting", "Cheer up, it is fine."),
    completion(GOLD.perception, GOLD.reasoning, ["Reassurance"], "calm", "Stop complaining."),
)


@pytest.fixture
def policy_and_reference(tiny_qwen2_audio: SpeechLM) -> tuple[SpeechLM, SpeechLM]:
    reference = copy.deepcopy(tiny_qwen2_audio)
    prepare_policy(tiny_qwen2_audio, reference, RlConfig(lora=LORA))
    return tiny_qwen2_audio, reference


def test_grpo_loss_by_hand() -> None:
    # Token 0: pi = pi_ref, no KL. Token 1: log pi_ref - log pi = 1, KL = e - 1 - 1. Token 2 is padding.
    logprobs = torch.tensor([[-1.0, -2.0, -5.0]])
    reference = torch.tensor([[-1.0, -1.0, 0.0]])
    advantages = torch.tensor([[2.0, -1.0, 7.0]])
    mask = torch.tensor([[True, True, False]])

    loss, kl = grpo_token_loss(logprobs, logprobs, reference, advantages, mask, clip_epsilon=0.2, kl_coef=0.5)

    # per token: -(A - 0.5 KL) -> [-2, 1 + 0.5 (e - 2)], averaged over the two completion tokens
    assert float(loss) == pytest.approx((-2.0 + 1.0 + 0.5 * (math.e - 2)) / 2)
    assert float(kl) == pytest.approx((math.e - 2) / 2)


def test_grpo_loss_clips_only_in_the_advantages_favour() -> None:
    old = torch.zeros((2, 1))
    logprobs = torch.full((2, 1), math.log(1.5))
    advantages = torch.tensor([[1.0], [-1.0]])
    mask = torch.ones((2, 1), dtype=torch.bool)

    loss, _ = grpo_token_loss(logprobs, old, logprobs, advantages, mask, clip_epsilon=0.2, kl_coef=0.0)

    # ratio 1.5: a positive advantage is capped at 1.2 A, a negative one keeps 1.5 A (pessimistic).
    assert float(loss) == pytest.approx((-1.2 + 1.5) / 2)


def test_heuristic_scorer_compares_spans_with_gold() -> None:
    assert word_f1("a b c", "a b d") == pytest.approx(2 / 3)
    assert word_f1("", "a") == 0.0

    best = SCORER("item-1", parse_output(COMPLETIONS[0]))
    worst = SCORER("item-1", parse_output(COMPLETIONS[3]))

    assert best == StageScores(1.0, 1.0, 1.0, 5.0, 1.0)
    # One of two recommended strategies; the calm style is not the comforting one.
    assert worst.strategy == 0.5 and worst.audio_alignment == 0.0
    assert SCORER("unknown", parse_output(COMPLETIONS[0])) == StageScores(0.0, 0.0, 0.0, 0.0, 0.0)


def test_a_rollout_whose_judge_failed_carries_no_advantage_and_is_counted(
    policy_and_reference: tuple[SpeechLM, SpeechLM],
) -> None:
    policy, reference = policy_and_reference
    config = RlConfig(lora=LORA)
    failed_text = COMPLETIONS[2]

    def judge(item_id: str, parsed: ParsedOutput) -> tuple[float, float, float] | None:
        if parsed.text == failed_text:
            return None
        scores = SCORER(item_id, parsed)
        return scores.perception, scores.reasoning, scores.strategy

    asked: list[str] = []

    def response(item_id: str, parsed: ParsedOutput) -> RewardScore:
        asked.append(parsed.text)
        scores = SCORER(item_id, parsed)
        return RewardScore(content=scores.content, alignment=scores.audio_alignment)

    result = rl_update(
        policy, reference, [RolloutGroup(PROMPT_ITEM, COMPLETIONS)], combined_scorer(judge, response), config
    )

    scores = result.scores[0]
    assert [score.judge_failed for score in scores] == [False, False, True, False]
    assert failed_text not in asked
    assert torch.count_nonzero(result.token_advantages[0][2]) == 0
    assert torch.count_nonzero(result.span_advantages[0][2]) == 0
    # The other three are normalised among themselves, as if the failed one had not been sampled.
    judged = [scores[0], scores[1], scores[3]]
    assert torch.equal(result.span_advantages[0][[0, 1, 3]], span_advantages(judged, config.sdca))
    metrics = result.metrics()
    assert metrics["judge_failed_rollouts"] == 1.0
    # Mean rewards are over the judged rollouts: perception 1, 0 (happy) and 1.
    assert metrics["reward_perception_score"] == pytest.approx(sum(score.perception for score in judged) / 3)


def test_sdca_step_gives_each_span_its_own_advantage(policy_and_reference: tuple[SpeechLM, SpeechLM]) -> None:
    policy, reference = policy_and_reference
    config = RlConfig(lora=LORA)

    result = rl_update(policy, reference, [RolloutGroup(PROMPT_ITEM, COMPLETIONS)], SCORER, config)

    assert math.isfinite(result.loss)
    gradients = [p.grad for p in policy.trainable_parameters() if p.grad is not None]
    assert gradients and all(torch.isfinite(g).all() for g in gradients)
    assert any(g.abs().sum() > 0 for g in gradients)
    # Identical weights (LoRA starts at zero), no dropout: the policy is the reference.
    assert result.kl == pytest.approx(0.0, abs=1e-6)

    scores = result.scores[0]
    expected_spans = span_advantages(scores, config.sdca)
    expected_totals = total_advantages(scores, config.sdca)
    assert torch.equal(result.span_advantages[0], expected_spans)
    advantages, mask = result.token_advantages[0], result.completion_masks[0]
    for row, spans in enumerate(result.token_spans[0]):
        assert list(spans) == ["perception", "reasoning", "strategy", "response"]
        inside = torch.zeros_like(mask)
        for column, (start, end) in enumerate(spans.values()):
            assert (advantages[row, start:end] == expected_spans[row, column]).all()
            inside[row, start:end] = True
        # Tags, newlines and the end-of-turn token carry the normalised total reward.
        outside = mask[row] & ~inside[row]
        assert outside.any() and (advantages[row, outside] == expected_totals[row]).all()
        assert (advantages[row, ~mask[row]] == 0).all()
    # Rollout 1 has the worst perception but the best response: the two spans pull apart.
    first_row = result.token_spans[0][1]
    assert advantages[1, first_row["perception"][0]] < 0 < advantages[1, first_row["response"][0]]


def test_vanilla_grpo_gives_every_completion_token_the_same_advantage(
    policy_and_reference: tuple[SpeechLM, SpeechLM],
) -> None:
    policy, reference = policy_and_reference
    config = RlConfig(mode="grpo", lora=LORA)

    result = rl_update(policy, reference, [RolloutGroup(PROMPT_ITEM, COMPLETIONS)], SCORER, config)

    totals = total_advantages(result.scores[0], SdcaConfig())
    advantages, mask = result.token_advantages[0], result.completion_masks[0]
    for row in range(len(COMPLETIONS)):
        assert (advantages[row, mask[row]] == totals[row]).all()
    assert len(set(totals.tolist())) == len(COMPLETIONS)


def test_reference_none_uses_the_policy_without_its_adapters(tiny_qwen2_audio: SpeechLM) -> None:
    prepare_policy(tiny_qwen2_audio, None, RlConfig(lora=LORA))
    optimizer = torch.optim.SGD(tiny_qwen2_audio.trainable_parameters(), lr=0.5)
    group = [RolloutGroup(PROMPT_ITEM, COMPLETIONS)]

    first = rl_update(tiny_qwen2_audio, None, group, SCORER, RlConfig(lora=LORA), optimizer)
    second = rl_update(tiny_qwen2_audio, None, group, SCORER, RlConfig(lora=LORA))

    assert first.kl == pytest.approx(0.0, abs=1e-6)
    # After an update the adapters move the policy away from the base model it is measured against.
    assert second.kl > 1e-6


def test_rl_step_samples_a_group_per_prompt_and_updates_lora(
    policy_and_reference: tuple[SpeechLM, SpeechLM],
) -> None:
    policy, reference = policy_and_reference

    def by_length(item_id: str, parsed: ParsedOutput) -> StageScores:
        # Sampled text from a random model is never well formed; its length still ranks rollouts.
        length = len(parsed.text)
        return StageScores(length % 5 / 4, length % 3 / 2, length % 2, 5.0 * (length % 7) / 6, 0.5)

    lora_before = [p.detach().clone() for p in policy.trainable_parameters()]
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    config = RlConfig(group_size=4, max_new_tokens=12, lora=LORA)

    result = rl_step(policy, reference, [PROMPT_ITEM], by_length, config, optimizer)

    assert len(result.completions[0]) == 4
    assert math.isfinite(result.loss) and result.kl == pytest.approx(0.0, abs=1e-6)
    assert set(result.metrics()) >= {
        "loss",
        "kl",
        "reward_total",
        "advantage_abs_response",
        "completion_tokens",
    }
    changed = [not torch.equal(a, b) for a, b in zip(lora_before, policy.trainable_parameters(), strict=True)]
    assert any(changed)


def test_combined_scorer_takes_stages_from_the_judge_and_response_from_the_reward_model() -> None:
    scorer = combined_scorer(
        lambda item, parsed: (0.9, 0.6, 0.3), lambda item, parsed: RewardScore(4.0, 0.25)
    )

    assert scorer("item-1", parse_output(COMPLETIONS[0])) == StageScores(0.9, 0.6, 0.3, 4.0, 0.25)


@pytest.mark.slow
def test_train_rl_reports_progress_and_stops_when_cancelled(tiny_qwen2_audio: SpeechLM) -> None:
    reports: list[tuple[float, str, dict[str, float]]] = []
    checks = iter([False, False, True])
    prompts = [PROMPT_ITEM, RlPrompt("item-2", voiced_audio(0.6, seed=3), 8000, PROMPT)]
    config = RlConfig(max_steps=3, group_size=2, max_new_tokens=6, lora=LORA)

    result = train_rl(
        tiny_qwen2_audio,
        None,
        prompts,
        SCORER,
        config,
        on_progress=lambda *report: reports.append(report),
        should_cancel=lambda: next(checks),
    )

    assert result.cancelled and result.steps_completed == 2 and result.total_steps == 3
    assert [(fraction, message) for fraction, message, _ in reports] == [
        (pytest.approx(1 / 3), "step 1/3"),
        (pytest.approx(2 / 3), "step 2/3"),
    ]
    assert result.history[-1]["step"] == 2.0 and tiny_qwen2_audio.lora == LORA


def test_config_round_trips_through_json_values() -> None:
    config = RlConfig(mode="grpo", kl_coef=0.1, sdca=SdcaConfig(tau=0.5), lora=LORA)

    assert RlConfig.from_dict(config.to_dict()) == config
    assert RlConfig().kl_coef == 0.04 and RlConfig().learning_rate == 1e-5 and RlConfig().group_size == 4
    with pytest.raises(ValueError, match="group_size"):
        RlConfig(group_size=1)


def test_a_rollout_cut_at_the_token_limit_has_no_end_of_turn_label(
    policy_and_reference: tuple[SpeechLM, SpeechLM],
) -> None:
    policy, reference = policy_and_reference
    group = [RolloutGroup(PROMPT_ITEM, (COMPLETIONS[0], "Okay."))]

    finished = rl_update(policy, reference, group, SCORER, RlConfig(lora=LORA, max_new_tokens=512))
    cut = rl_update(policy, reference, group, SCORER, RlConfig(lora=LORA, max_new_tokens=20))

    finished_counts = finished.completion_masks[0].sum(dim=1).tolist()
    assert cut.completion_masks[0].sum(dim=1).tolist() == [finished_counts[0] - 1, finished_counts[1]]


def test_several_updates_per_batch_reuse_the_rollouts(
    policy_and_reference: tuple[SpeechLM, SpeechLM],
) -> None:
    policy, reference = policy_and_reference
    optimizer = torch.optim.SGD(policy.trainable_parameters(), lr=0.5)
    config = RlConfig(updates_per_batch=3, lora=LORA)

    result = rl_update(policy, reference, [RolloutGroup(PROMPT_ITEM, COMPLETIONS)], SCORER, config, optimizer)
    after = rl_update(policy, reference, [RolloutGroup(PROMPT_ITEM, COMPLETIONS)], SCORER, config)

    assert result.kl == pytest.approx(0.0, abs=1e-6)
    assert after.kl > 1e-6 and math.isfinite(after.loss)


def _sequence_logprobs(policy: SpeechLM, completions: tuple[str, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Return each completion's summed log-probability, and that of its perception span alone."""
    batch = policy.collate([SpeechExample(PROMPT_ITEM.audio, PROMPT, text) for text in completions])
    with torch.no_grad():
        logprobs = completion_logprobs(policy.forward(batch).logits, batch.labels)  # type: ignore[arg-type]
    perception = torch.stack(
        [
            logprobs[row, start:end].sum()
            for row, (start, end) in enumerate(
                spans["perception"] for spans in policy.target_span_token_ranges(batch)
            )
        ]
    )
    return logprobs.sum(dim=1), perception


@pytest.mark.parametrize("mode", ["grpo", "sdca"])
def test_one_update_raises_the_better_rollouts_likelihood_and_lowers_the_worse(
    tiny_qwen2_audio: SpeechLM, mode: str
) -> None:
    # The sign check of the whole update: scores -> advantages -> loss -> gradient step. The gold
    # rollout must gain probability and the rollout with the lowest R_total must lose it; under
    # SDCA the rollout whose perception is wrong must lose probability on its perception span.
    policy = tiny_qwen2_audio
    reference = copy.deepcopy(policy)
    config = RlConfig(mode=mode, lora=None, kl_coef=0.0)  # type: ignore[arg-type]
    prepare_policy(policy, reference, config)
    group = RolloutGroup(PROMPT_ITEM, COMPLETIONS)
    totals = total_advantages(rl_update(policy, reference, [group], SCORER, config).scores[0])
    assert int(totals.argmax()) == 0
    worst = int(totals.argmin())
    before, perception_before = _sequence_logprobs(policy, COMPLETIONS)

    rl_update(
        policy, reference, [group], SCORER, config, torch.optim.SGD(policy.trainable_parameters(), lr=0.05)
    )

    after, perception_after = _sequence_logprobs(policy, COMPLETIONS)
    assert after[0] > before[0]
    assert after[worst] < before[worst]
    if mode == "sdca":
        # Rollout 1 says "happy" for a sad speaker: its perception span is the one SDCA blames.
        assert perception_after[1] < perception_before[1]


def test_dropout_disabled_also_switches_off_functional_dropout_rates(tiny_qwen2_audio: SpeechLM) -> None:
    # transformers applies attention, activation and encoder dropout and layerdrop as float rates on
    # modules (F.dropout(..., training=self.training)), not as nn.Dropout layers. The update must
    # see the rollouts' policy, without dropout, while the model stays in training mode.
    model = tiny_qwen2_audio.model
    rates = ("dropout", "attention_dropout", "activation_dropout", "layerdrop")
    for module in model.modules():
        for name in rates:
            if isinstance(getattr(module, name, None), float):
                setattr(module, name, 0.5)
    model.train()
    batch = tiny_qwen2_audio.collate([SpeechExample(PROMPT_ITEM.audio, PROMPT, COMPLETIONS[0])])

    with torch.no_grad(), dropout_disabled(model):
        first, second = (tiny_qwen2_audio.forward(batch).logits for _ in range(2))

    assert torch.equal(first, second)
    assert model.training
    assert all(
        getattr(m, n) == 0.5 for m in model.modules() for n in rates if isinstance(getattr(m, n, None), float)
    )


def test_full_weight_rl_measures_kl_against_a_frozen_copy_of_the_start(tiny_qwen2_audio: SpeechLM) -> None:
    def by_length(item_id: str, parsed: ParsedOutput) -> StageScores:
        length = len(parsed.text)
        return StageScores(length % 5 / 4, length % 3 / 2, length % 2, 5.0 * (length % 7) / 6, 0.5)

    start = [parameter.detach().clone() for parameter in tiny_qwen2_audio.model.parameters()]
    config = RlConfig(lora=None, group_size=2, max_new_tokens=8, max_steps=2, learning_rate=1e-2)

    # No adapters to switch off: ``reference=None`` gets a frozen copy of the starting weights.
    result = train_rl(tiny_qwen2_audio, None, [PROMPT_ITEM], by_length, config)

    first, second = result.history
    assert first["kl"] == pytest.approx(0.0, abs=1e-6)
    assert second["kl"] > 1e-6
    assert tiny_qwen2_audio.lora is None
    moved = [not torch.equal(a, b) for a, b in zip(start, tiny_qwen2_audio.model.parameters(), strict=True)]
    assert any(moved)
