import pytest

from evaluation.results.leaderboard import StageRecord
from evaluation.results.propagation import error_propagation


def _item(item, perception, reasoning, content, scenario="implicit"):
    records = []
    perception_stage = "shift_perception" if scenario == "emotion-shift" else "perception"
    for stage, score in (
        (perception_stage, perception),
        ("reasoning", reasoning),
        ("response_content", content),
    ):
        if score != "absent":
            records.append(StageRecord("S", item, scenario, stage, score))
    return records


# Threshold 0.6 of each stage maximum: perception and reasoning >= 6/10, content >= 3/5.
#   item  P      R      Resp         P ok  R ok  Resp ok
#   1     8      7      4            y     y     y
#   2     9      5      2            y     n     n
#   3     7      6      2            y     y     n      (6/10 = 0.6 counts as correct)
#   4     4      3      2            n     n     n
#   5     5      8      2            n     y     n
#   6     6 (shift item) 6   3       y     y     y
#   7     error  8      4            excluded (judge error)
#   8     8      8      (no record)  excluded (incomplete)
# P ok = {1,2,3,6} = 4, of which R ok {1,3,6} = 3           -> P(R|P) = 3/4
# R ok = {1,3,5,6} = 4, of which Resp ok {1,6} = 2          -> P(Resp|R) = 2/4
# P wrong = {4,5} = 2, of which R wrong {4} = 1
# R wrong = {2,4} = 2, of which Resp wrong {2,4} = 2        -> cascade = (1 + 2) / (2 + 2) = 0.75
RECORDS = [
    *_item(1, 8, 7, 4),
    *_item(2, 9, 5, 2),
    *_item(3, 7, 6, 2),
    *_item(4, 4, 3, 2),
    *_item(5, 5, 8, 2),
    *_item(6, 6, 6, 3, scenario="emotion-shift"),
    *_item(7, None, 8, 4),
    *_item(8, 8, 8, "absent"),
]


def test_conditional_correctness_and_cascade_ratio_by_hand():
    result = error_propagation(RECORDS, threshold=0.6)["S"]
    assert (result.n_items, result.n_items_excluded) == (6, 2)
    assert (result.n_perception_correct, result.n_perception_and_reasoning_correct) == (4, 3)
    assert (result.n_reasoning_correct, result.n_reasoning_and_response_correct) == (4, 2)
    assert (result.n_perception_wrong, result.n_perception_and_reasoning_wrong) == (2, 1)
    assert (result.n_reasoning_wrong, result.n_reasoning_and_response_wrong) == (2, 2)
    assert result.p_reasoning_given_perception == pytest.approx(0.75)
    assert result.p_response_given_reasoning == pytest.approx(0.5)
    assert result.cascade_error_ratio == pytest.approx(0.75)


def test_threshold_is_a_setting():
    # at 0.8: P ok {1,2} (8, 9), R ok {5} (8) -> P(R|P) = 0/2; R ok {5}, Resp ok at 4/5 {1} -> 0/1
    result = error_propagation(RECORDS, threshold=0.8)["S"]
    assert result.p_reasoning_given_perception == 0.0
    assert result.p_response_given_reasoning == 0.0


def test_undefined_probabilities_are_none():
    result = error_propagation(_item(1, 1, 1, 1), threshold=0.6)["S"]
    assert result.p_reasoning_given_perception is None
    assert result.p_response_given_reasoning is None
    assert result.cascade_error_ratio == 1.0


def test_threshold_must_be_a_share():
    with pytest.raises(ValueError, match="share"):
        error_propagation(RECORDS, threshold=6)
