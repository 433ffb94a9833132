import math

import pytest

from evaluation.judging.rubrics import (
    FLAG_CAPS,
    STAGES,
    SUBSCORE_RANGES,
    RubricError,
    StageScore,
    score_stage,
    stage_max,
)

PERCEPTION_8 = {
    "polarity": 1,
    "emotion": 2,
    "modality_consistency": 1,
    "situation": 2,
    "intensity": 1,
    "prosody": 1,
}
PERCEPTION_9 = {**PERCEPTION_8, "intensity": 2}
REASONING_9 = {"context": 2, "latent_need": 1, "core_demand": 2, "strategy": 3, "constraints": 1}


def test_stage_maxima_follow_the_paper():
    assert {stage: stage_max(stage) for stage in STAGES} == {
        "perception": 10,
        "reasoning": 10,
        "shift_perception": 10,
        "response_content": 5,
        "response_audio": 5,
    }


def test_every_stage_has_ranges_and_caps():
    assert set(SUBSCORE_RANGES) == set(STAGES) == set(FLAG_CAPS)


def test_perception_without_flags_is_the_raw_sum():
    # 1 + 2 + 1 + 2 + 1 + 1 = 8
    assert score_stage("perception", PERCEPTION_8, []) == StageScore(
        stage="perception", raw_sum=8.0, cap=None, cap_reasons=(), final=8.0, max_score=10
    )


@pytest.mark.parametrize(
    ("flags", "cap", "final"),
    [
        (["wrong_primary_emotion"], 5, 5.0),
        (["empty_or_off_topic"], 1, 1.0),
        (["wrong_primary_emotion", "empty_or_off_topic"], 1, 1.0),
    ],
)
def test_perception_caps(flags, cap, final):
    score = score_stage("perception", PERCEPTION_8, flags)
    assert (score.raw_sum, score.cap, score.final) == (8.0, cap, final)


def test_all_applicable_reasons_are_kept_lowest_cap_first():
    score = score_stage("perception", PERCEPTION_8, ["wrong_primary_emotion", "empty_or_off_topic"])
    assert score.cap_reasons == ("empty_or_off_topic", "wrong_primary_emotion")


def test_a_cap_above_the_raw_sum_does_not_raise_the_score():
    low = {**PERCEPTION_8, "emotion": 0, "situation": 0, "prosody": 0}  # 1 + 0 + 1 + 0 + 1 + 0 = 3
    score = score_stage("perception", low, ["wrong_primary_emotion"])
    assert (score.raw_sum, score.cap, score.final) == (3.0, 5, 3.0)


def test_missed_modality_conflict_caps_only_modality_conflict_items():
    on_conflict = score_stage(
        "perception", PERCEPTION_9, ["missed_modality_conflict"], scenario="modality-conflict"
    )
    on_implicit = score_stage("perception", PERCEPTION_9, ["missed_modality_conflict"], scenario="implicit")
    without_scenario = score_stage("perception", PERCEPTION_9, ["missed_modality_conflict"])
    assert (on_conflict.cap, on_conflict.final, on_conflict.cap_reasons) == (
        7,
        7.0,
        ("missed_modality_conflict",),
    )
    assert (on_implicit.cap, on_implicit.final, on_implicit.cap_reasons) == (None, 9.0, ())
    assert without_scenario.final == 9.0


@pytest.mark.parametrize(
    ("flags", "cap", "final"),
    [
        ([], None, 9.0),
        (["no_recommended_overlap"], 8, 8.0),
        (["recommends_not_recommended"], 6, 6.0),
        (["recommends_not_recommended", "no_recommended_overlap"], 6, 6.0),
        (["missing_mental_state", "no_recommended_overlap"], 1, 1.0),
        (["missing_strategy"], 1, 1.0),
        (["missing_mental_state", "missing_strategy"], 1, 1.0),
        # a stored judgement's unsplit flag keeps its cap
        (["missing_fields"], 1, 1.0),
    ],
)
def test_reasoning_caps(flags, cap, final):
    # 2 + 1 + 2 + 3 + 1 = 9
    score = score_stage("reasoning", REASONING_9, flags)
    assert (score.raw_sum, score.cap, score.final, score.max_score) == (9.0, cap, final, 10)


@pytest.mark.parametrize(
    ("subscores", "flags", "raw", "cap", "reasons", "final"),
    [
        ({"situation": 2, "emotion_shift": 5, "structure": 2}, [], 9.0, None, (), 9.0),
        # a fundamental miss (situation 0) caps 8 at 5
        ({"situation": 0, "emotion_shift": 6, "structure": 2}, [], 8.0, 5, ("fundamental_miss",), 5.0),
        # emotion shift 0: the cap of 5 is above the raw sum of 4
        ({"situation": 2, "emotion_shift": 0, "structure": 2}, [], 4.0, 5, ("fundamental_miss",), 4.0),
        (
            {"situation": 0, "emotion_shift": 3, "structure": 1},
            ["empty_or_off_task"],
            4.0,
            1,
            ("empty_or_off_task", "fundamental_miss"),
            1.0,
        ),
    ],
)
def test_shift_perception_caps(subscores, flags, raw, cap, reasons, final):
    score = score_stage("shift_perception", subscores, flags, scenario="emotion-shift")
    assert (score.raw_sum, score.cap, score.cap_reasons, score.final) == (raw, cap, reasons, final)


@pytest.mark.parametrize(
    ("content", "flags", "cap", "final"),
    [
        (4, [], None, 4.0),
        (4, ["hard_failure"], 3, 3.0),
        (4, ["harmful"], 1, 1.0),
        (2, ["hard_failure"], 3, 2.0),
    ],
)
def test_response_content_caps(content, flags, cap, final):
    score = score_stage("response_content", {"content": content}, flags)
    assert (score.cap, score.final, score.max_score) == (cap, final, 5)


@pytest.mark.parametrize(
    ("flags", "cap", "final"),
    [([], None, 5.0), (["inappropriate_voice"], 2, 2.0), (["unintelligible", "inappropriate_voice"], 1, 1.0)],
)
def test_response_audio_caps(flags, cap, final):
    score = score_stage("response_audio", {"audio": 5}, flags)
    assert (score.cap, score.final) == (cap, final)


def test_fractional_subscores_are_accepted():
    score = score_stage("perception", {**PERCEPTION_8, "emotion": 1.5}, [])
    assert score.final == 7.5


@pytest.mark.parametrize(
    ("subscores", "message"),
    [
        ({k: v for k, v in PERCEPTION_8.items() if k != "prosody"}, "missing perception sub-score"),
        ({**PERCEPTION_8, "arousal": 1}, "unknown perception sub-score"),
        ({**PERCEPTION_8, "emotion": 3}, "outside 0-2"),
        ({**PERCEPTION_8, "polarity": -1}, "outside 0-1"),
        ({**PERCEPTION_8, "emotion": "2"}, "not a number"),
        ({**PERCEPTION_8, "emotion": None}, "not a number"),
        ({**PERCEPTION_8, "polarity": True}, "not a number"),
        ({**PERCEPTION_8, "emotion": math.nan}, "not a number"),
    ],
)
def test_bad_subscores_raise_instead_of_being_clipped(subscores, message):
    with pytest.raises(RubricError, match=message):
        score_stage("perception", subscores, [])


@pytest.mark.parametrize("content", [0, 6])
def test_response_scores_start_at_one(content):
    with pytest.raises(RubricError, match="outside 1-5"):
        score_stage("response_content", {"content": content}, [])


def test_unknown_flags_raise():
    with pytest.raises(RubricError, match="unknown perception flag"):
        score_stage("perception", PERCEPTION_8, ["sounds_off"])
    # a real flag of another stage is still unknown here
    with pytest.raises(RubricError, match="harmful"):
        score_stage("perception", PERCEPTION_8, ["harmful"])


def test_unknown_stage_raises():
    with pytest.raises(RubricError, match="unknown stage"):
        score_stage("empathy", {}, [])
