"""Training records turned into the inputs of SFT, RL, reward training and inference.

The reward model hears text-only rollouts through a style-controllable TTS
(``annotation.audio.tts``: eSpeak NG by default, or an OpenAI-compatible speech server).
"""

from __future__ import annotations

from collections.abc import Sequence

from annotation.audio.tts import speak_in_style
from evaluation.judging.dialogues.history import DialogueHistory, EarlierTurn, choose_reply
from ml.core.answers import dialogue_turn_rows
from ml.core.config import RlConfig
from ml.core.inference import InferenceItem
from ml.core.judge_scoring import JudgeGold
from ml.core.loop import CancelCheck, ProgressCallback, ResumeSpec, TrainingResult
from ml.core.reward.features import StyleSynthesizer
from ml.core.reward.ladder import RewardSourceItem
from ml.core.reward.model import RewardModel
from ml.core.reward.scoring import RewardScore, UserTurn, response_reward_scorer
from ml.core.rl.heuristic import HeuristicReference, HeuristicScorer
from ml.core.rl.rollouts import RolloutScorer, StageJudge, combined_scorer
from ml.core.rl.training import train_rl
from ml.core.runtime import Ranks
from ml.core.sft import SftExample
from ml.core.speech.inputs import PriorTurn
from ml.core.speech.model import SpeechLM
from ml.core.training_records import RecordAudio, TrainingRecord
from webapp.lib.output_format import ParsedOutput


def prior_turns(row: RecordAudio) -> tuple[PriorTurn, ...]:
    """Return a dialogue record's earlier exchanges as the model reads them (none for one item)."""
    return tuple(
        PriorTurn(audio, turn.reply, sample_rate)
        for turn, (audio, sample_rate) in zip(row.record.history, row.history_audio, strict=True)
    )


def sft_examples(rows: Sequence[RecordAudio]) -> list[SftExample]:
    """Return one SFT example per record that has a target (a reference response); a dialogue
    turn's history conditions its example, the loss stays on its own target."""
    examples: list[SftExample] = []
    for row in rows:
        target = row.record.target
        if target is not None:
            examples.append(
                SftExample(row.audio, row.sample_rate, row.record.prompt, target, prior_turns(row))
            )
    return examples


def inference_items(rows: Sequence[RecordAudio]) -> list[InferenceItem]:
    """Return what inference (and RL, as prompts) answers: each record's audio, instruction and
    dialogue history."""
    return [
        InferenceItem(row.record.item_id, row.audio, row.sample_rate, row.record.prompt, prior_turns(row))
        for row in rows
    ]


def dialogue_inference_items(rows: Sequence[RecordAudio]) -> list[list[InferenceItem]]:
    """Return the dialogue turns among the records as dialogues (each its turns in order), for
    ``ml.core.inference.run_dialogue_inference``; single items are left out."""
    return [inference_items(turns) for turns in dialogue_turn_rows(rows)]


def heuristic_references(rows: Sequence[RecordAudio]) -> dict[str, HeuristicReference]:
    """Return what the heuristic RL scorer compares each item's rollouts with."""
    return {
        row.record.item_id: HeuristicReference(
            perception=row.record.perception,
            reasoning=row.record.reasoning,
            strategies=row.record.strategies,
            response=row.record.response,
            speech_style=row.record.speech_style or None,
        )
        for row in rows
    }


def judge_golds(rows: Sequence[RecordAudio]) -> dict[str, JudgeGold]:
    """Return what the rubric judge compares each item's rollouts with."""
    return {
        row.record.item_id: JudgeGold(
            text=row.record.text,
            scenario=row.record.scenario,
            perception=row.record.gold_perception,
            tom=row.record.gold_tom,
            history=judged_history(row.record),
        )
        for row in rows
    }


def judged_history(record: TrainingRecord) -> DialogueHistory | None:
    """Return a multi-turn record's history as the rubric judge reads it (None for a single item).

    The record's earlier replies are gold or reference replies, so the judge is told so; it holds
    no earlier gold perception, so none is shown.
    """
    if not record.turn:
        return None
    earlier = tuple(
        EarlierTurn(turn.turn, turn.text, None, *choose_reply(None, turn.reply)) for turn in record.history
    )
    return DialogueHistory(turn=record.turn, earlier=earlier)


def reward_sources(rows: Sequence[RecordAudio]) -> list[RewardSourceItem]:
    """Return the user turns appendix D.1's ladder is built from (records with a reference response)."""
    return [
        RewardSourceItem(
            item_id=row.record.item_id,
            user_audio=row.audio,
            sample_rate=row.sample_rate,
            emotion=row.record.emotion,
            reference_response=row.record.response,
            speech_style=row.record.speech_style or None,
            user_text=row.record.text,
            strategies=row.record.strategies,
        )
        for row in rows
        if row.record.response.strip()
    ]


def user_turns(rows: Sequence[RecordAudio]) -> dict[str, UserTurn]:
    """Return what the reward model knows about each item when it scores a response."""
    return {row.record.item_id: UserTurn(row.audio, row.sample_rate, row.record.emotion) for row in rows}


def rollout_scorer(
    rows: Sequence[RecordAudio],
    stage_judge: StageJudge | None = None,
    reward_model: RewardModel | None = None,
    synthesize: StyleSynthesizer = speak_in_style,
) -> RolloutScorer:
    """Return the RL scorer: stage scores from the judge and the response reward from the reward
    model (hearing responses through ``synthesize``), each replaced by ``ml.core.rl.HeuristicScorer``
    (word overlap with gold) when not given."""
    heuristic = HeuristicScorer(heuristic_references(rows))
    if stage_judge is None and reward_model is None:
        return heuristic

    def heuristic_stages(item_id: str, parsed: ParsedOutput) -> tuple[float, float, float]:
        scores = heuristic(item_id, parsed)
        return scores.perception, scores.reasoning, scores.strategy

    def heuristic_response(item_id: str, parsed: ParsedOutput) -> RewardScore:
        scores = heuristic(item_id, parsed)
        return RewardScore(content=scores.content, alignment=scores.audio_alignment)

    response = (
        response_reward_scorer(reward_model, user_turns(rows), synthesize)
        if reward_model is not None
        else heuristic_response
    )
    return combined_scorer(stage_judge or heuristic_stages, response)


def train_rl_on_records(
    policy: SpeechLM,
    rows: Sequence[RecordAudio],
    config: RlConfig,
    stage_judge: StageJudge | None = None,
    reward_model: RewardModel | None = None,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
    synthesize: StyleSynthesizer = speak_in_style,
    ranks: Ranks | None = None,
    resume: ResumeSpec | None = None,
) -> TrainingResult:
    """Run RL with the records' audio and instructions as prompts, scored by ``rollout_scorer``.

    The reference is the policy with its LoRA adapters switched off
    (``ml.core.runtime.load_start_model(for_rl=True)`` prepares the policy for that), or, for
    full-weight RL (``config.lora`` None), a frozen copy of the starting policy (``train_rl``).
    """
    return train_rl(
        policy,
        None,
        inference_items(rows),
        rollout_scorer(rows, stage_judge, reward_model, synthesize),
        config,
        on_progress,
        should_cancel,
        ranks=ranks,
        resume=resume,
    )
