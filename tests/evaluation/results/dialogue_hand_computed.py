"""Two systems answering two three-turn dialogues, with every figure computed by hand: the pure-module
tests build records from it, the page and API tests store it as judgements, and both check the same
expected values."""

from __future__ import annotations

from typing import Any

from annotation.recording.models import Dialogue
from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from evaluation.results.dialogues.scores import TurnRecord
from evaluation.results.leaderboard import StageRecord
from tests.factories import DialogueFactory, JudgementFactory, ModelOutputFactory

# dialogue -> turn -> scenario
TURN_SCENARIOS = {
    "D1": {1: "implicit", 2: "high-arousal", 3: "emotion-shift"},
    "D2": {1: "implicit", 2: "implicit", 3: "audio-dominant"},
}

# system -> dialogue -> turn -> (perception, reasoning, response content, response audio); None: a
# judge error; B is text-only (no audio score). Turn overall score = Table 2's All of the one output:
#   A D1: t1 (8 + 8 + 4+4)/3 = 8.0; t2 (6 + 7 + 4+3)/3 = 6.6667; t3 (4 + 5 + 3+3)/3 = 5.0 < 6: falls at 3
#         dialogue mean (8 + 6.6667 + 5) / 3 = 6.5556
#   A D2: t1 (9 + 8 + 5+4)/3 = 8.6667; t2 reasoning error: not judged; t3 (8 + 8 + 4+5)/3 = 8.3333
#         dialogue mean (8.6667 + 8.3333) / 2 = 8.5, never below 6
#   A: mean of dialogues (6.5556 + 8.5) / 2 = 7.5278; 1 of 2 fell (0.5), at turn 3
#   B: no turn has an overall score: with audio not judged its response is Content alone (out of 5),
#      which is not Table 2's response (out of 10), so no turn is judged and nothing falls:
#      0 dialogues judged, mean "-", share fell "-"
SCORES: dict[str, dict[str, dict[int, tuple[float | None, ...]]]] = {
    "A": {
        "D1": {1: (8, 8, 4, 4), 2: (6, 7, 4, 3), 3: (4, 5, 3, 3)},
        "D2": {1: (9, 8, 5, 4), 2: (7, None, 4, 4), 3: (8, 8, 4, 5)},
    },
    "B": {
        "D1": {1: (5, 6, 3), 2: (7, 7, 4), 3: (6, 6, 3)},
        "D2": {1: (8, 8, 4), 2: (6, 5, 3), 3: (7, 6, 5)},
    },
}

# Table 2 per turn index (turn 1 of both dialogues, then turn 2, then turn 3):
#   turn 1  A: perception (8 + 9)/2 = 8.5, reasoning 8, content 4.5, audio 4, response 8.5,
#              All (8.5 + 8 + 8.5)/3 = 8.3333
#           B: perception 6.5, reasoning 7, content 3.5, audio "-" -> response "-", All "-"
#   turn 2  A: perception (6 + 7)/2 = 6.5 (Intense 6, Implicit 7), reasoning 7 (1 excluded),
#              content 4, audio 3.5, response 7.5, All 7.0
#           B: perception 6.5, reasoning 6, content 3.5, response "-", All "-"
#   turn 3  A: perception (4 + 8)/2 = 6 (Shift 4, Neutral 8), reasoning 6.5, content 3.5, audio 4,
#              response 7.5, All 20/3 = 6.6667
#           B: perception 6.5, reasoning 6, content 4, response "-", All "-"
EXPECTED_PER_TURN: dict[int, dict[str, Any]] = {
    1: {
        "A": {"perception_avg": 8.5, "reasoning_avg": 8.0, "response_avg": 8.5, "all_avg": 25 / 3},
        "B": {
            "perception_avg": 6.5,
            "reasoning_avg": 7.0,
            "response_content": 3.5,
            "response_avg": None,
            "all_avg": None,
        },
    },
    2: {
        "A": {"perception_avg": 6.5, "reasoning_avg": 7.0, "response_avg": 7.5, "all_avg": 7.0},
        "B": {
            "perception_avg": 6.5,
            "reasoning_avg": 6.0,
            "response_content": 3.5,
            "response_avg": None,
            "all_avg": None,
        },
    },
    3: {
        "A": {"perception_avg": 6.0, "reasoning_avg": 6.5, "response_avg": 7.5, "all_avg": 20 / 3},
        "B": {
            "perception_avg": 6.5,
            "reasoning_avg": 6.0,
            "response_content": 4.0,
            "response_avg": None,
            "all_avg": None,
        },
    },
}
EXPECTED_SUMMARIES: dict[str, dict[str, Any]] = {
    "A": {"n_dialogues": 2, "mean": (59 / 9 + 8.5) / 2, "n_fell": 1, "share_fell": 0.5, "fell_at": {3: 1}},
    "B": {"n_dialogues": 0, "mean": None, "n_fell": 0, "share_fell": None, "fell_at": {}},
}

STAGE_ORDER = ("perception", "reasoning", "response_content", "response_audio")


def turn_item_id(dialogue: str, turn: int) -> str:
    return f"{dialogue}.t{turn}"


def judged_stage(stage: str, scenario: str) -> str:
    return "shift_perception" if stage == "perception" and scenario == "emotion-shift" else stage


def stage_scores() -> list[tuple[str, str, int, str, str, float | None]]:
    """Return (system, dialogue, turn, scenario, judged stage, score) for every stored judgement."""
    rows = []
    for system, dialogues in SCORES.items():
        for dialogue, turns in dialogues.items():
            for turn, scores in turns.items():
                scenario = TURN_SCENARIOS[dialogue][turn]
                for stage, score in zip(STAGE_ORDER, scores, strict=False):
                    rows.append((system, dialogue, turn, scenario, judged_stage(stage, scenario), score))
    return rows


def turn_records() -> list[TurnRecord]:
    """Return the scores as the records the pure dialogue module reads."""
    return [
        TurnRecord(StageRecord(system, turn_item_id(dialogue, turn), scenario, stage, score), dialogue, turn)
        for system, dialogue, turn, scenario, stage, score in stage_scores()
    ]


def store_dialogues(config: JudgeConfig) -> dict[str, Dialogue]:
    """Store the dialogues, both systems' outputs for every turn and the judge's scores; return the dialogues."""
    dialogues = {}
    for name, scenarios in TURN_SCENARIOS.items():
        dialogue = DialogueFactory.create(external_id=name, turns=len(scenarios))
        for item in dialogue.turns.all():
            item.scenario = scenarios[item.turn or 0]
            item.save(update_fields=["scenario"])
        dialogues[name] = dialogue
    for system_name, by_dialogue in SCORES.items():
        system, _ = System.objects.get_or_create(name=system_name, defaults={"text_only": system_name == "B"})
        for dialogue_name, turns in by_dialogue.items():
            for turn, scores in turns.items():
                output = ModelOutputFactory.create(
                    system=system,
                    item=dialogues[dialogue_name].turns.get(turn=turn),
                    response_audio_key="",
                    response_text=f"{system_name} answers {dialogue_name} turn {turn}.",
                )
                scenario = TURN_SCENARIOS[dialogue_name][turn]
                for stage, score in zip(STAGE_ORDER, scores, strict=False):
                    JudgementFactory.create(
                        output=output, stage=judged_stage(stage, scenario), judge_config=config, score=score
                    )
    return dialogues
