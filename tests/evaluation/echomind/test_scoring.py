"""EchoMind's figures against values computed by hand (the arithmetic is written beside each)."""

from __future__ import annotations

import csv
import io

import pytest

from evaluation.echomind.scoring import (
    HEADINGS,
    NOT_COMPUTED,
    AnswerRecord,
    BoardExpectations,
    DeliveryScore,
    accuracy,
    accuracy_by,
    build_board,
    cells,
    cells_with_coverage,
    corpus_wer,
    delivery_effects,
    to_csv,
    to_latex,
    word_errors,
)


def answer(
    question: str, level: str, qtype: str, attribute: str, *, parsed: bool = True, correct: bool
) -> AnswerRecord:
    dimension = "speaker" if attribute == "male" else "paralinguistic"
    return AnswerRecord("S", question, level, qtype, attribute, dimension, "target", parsed, correct)


ANSWERS = [
    answer("q1", "understanding", "emotion", "sad_tone", correct=True),
    answer("q2", "understanding", "emotion", "sad_tone", correct=False),
    answer("q3", "understanding", "gender", "male", parsed=False, correct=False),
    answer("q4", "reasoning", "speaker intent", "sad_tone", correct=True),
    answer("q5", "reasoning", "speaker intent", "male", correct=True),
]


def test_accuracy_counts_an_unparseable_answer_as_asked_and_wrong_with_a_wilson_interval() -> None:
    understanding = accuracy(a for a in ANSWERS if a.level == "understanding")
    assert (understanding.correct, understanding.asked, understanding.unparsed) == (1, 3, 1)
    assert understanding.rate == pytest.approx(1 / 3)
    # Wilson, z = 1.96, p = 1/3, n = 3: centre (p + z²/2n)/(1 + z²/n) = 0.97360/2.28053 = 0.42692,
    # half 1.96·sqrt(p(1-p)/n + z²/4n²)/(1 + z²/n) = 1.96·0.42519/2.28053 = 0.36543.
    assert understanding.low == pytest.approx(0.0615, abs=1e-3)
    assert understanding.high == pytest.approx(0.7924, abs=1e-3)


def test_accuracy_per_question_type_attribute_dimension_and_level() -> None:
    by_type = accuracy_by(ANSWERS, "question type")
    assert {key: (a.correct, a.asked) for key, a in by_type.items()} == {
        ("S", "emotion"): (1, 2),
        ("S", "gender"): (0, 1),
        ("S", "speaker intent"): (2, 2),
    }
    by_attribute = accuracy_by(ANSWERS, "attribute")
    assert by_attribute[("S", "sad_tone")].rate == pytest.approx(2 / 3)
    assert by_attribute[("S", "male")].rate == pytest.approx(1 / 2)
    assert accuracy_by(ANSWERS, "dimension")[("S", "speaker")].unparsed == 1
    assert accuracy_by(ANSWERS, "level")[("S", "reasoning")].rate == 1.0


def test_a_breakdown_counts_the_questions_of_its_group_any_system_answered() -> None:
    # T answered q1 only: on "emotion" (q1, q2) it stands on 1 of 2, S on 2 of 2
    answers = [
        *ANSWERS,
        AnswerRecord("T", "q1", "understanding", "emotion", "sad_tone", "x", "target", True, True),
    ]
    by_type = accuracy_by(answers, "question type")
    assert (by_type[("S", "emotion")].coverage.text, by_type[("T", "emotion")].coverage.text) == (
        "2/2",
        "1/2",
    )


def test_wer_is_all_word_errors_over_all_reference_words() -> None:
    # "the" deleted and "the" -> "a": 2 errors of 7 words; the second pair differs only in case
    # and punctuation, which WER ignores: 0 of 4. Corpus: 2 / 11.
    assert word_errors("I left the keys on the table", "I left keys on a table").errors == 2
    assert word_errors("See you at noon.", "see you at noon").errors == 0
    pairs = [
        ("I left the keys on the table", "I left keys on a table"),
        ("See you at noon.", "see you at noon"),
    ]
    assert corpus_wer(pairs) == pytest.approx(2 / 11)
    assert word_errors("two words", "").errors == 2  # an empty transcript deletes every word


def score(case: str, delivery: str, value: float) -> DeliveryScore:
    return DeliveryScore("S", case, "sad_tone", "none", "c1", delivery, value)


def test_delivery_effect_is_the_mean_paired_difference_with_a_t_interval() -> None:
    scores = [
        score("id_1", "target", 4), score("id_1", "neutral", 2), score("id_1", "alternative", 3),
        score("id_2", "target", 5), score("id_2", "neutral", 4),
        score("id_3", "target", 3), score("id_3", "neutral", 3), score("id_3", "alternative", 1),
    ]  # fmt: skip
    effects = {effect.contrast: effect for effect in delivery_effects(scores)}
    versus_neutral = effects["target - neutral"]
    # Differences 2, 1, 0: mean 1, sd 1, half-width t(0.975, 2) = 4.303 · 1/√3 = 2.4843.
    assert (versus_neutral.pairs, versus_neutral.mean) == (3, pytest.approx(1.0))
    assert versus_neutral.low == pytest.approx(-1.4843, abs=1e-3)
    assert versus_neutral.high == pytest.approx(3.4843, abs=1e-3)
    # Only id_1 and id_3 have an alternative: differences 1 and 2, mean 1.5, sd √0.5,
    # half-width 12.706 · 0.70711/√2 = 6.353.
    versus_alternative = effects["target - alternative"]
    assert (versus_alternative.pairs, versus_alternative.mean) == (2, pytest.approx(1.5))
    assert versus_alternative.low == pytest.approx(-4.853, abs=1e-3)
    assert versus_alternative.high == pytest.approx(7.853, abs=1e-3)


def test_a_single_pair_has_no_interval() -> None:
    (effect, *_) = delivery_effects([score("id_1", "target", 4), score("id_1", "neutral", 1)])
    assert (effect.mean, effect.low, effect.high) == (3.0, None, None)


def test_the_board_shows_not_computed_rather_than_zero() -> None:
    (row,) = build_board(
        ["S"],
        ANSWERS,
        [("S", "I left the keys on the table", "I left keys on a table")],
        [("S", "c1", 4.0), ("S", "c1", 3.0), ("S", "ves", 3.5)],
    )
    shown = cells(row)
    assert shown[:4] == ["S", "33.3", "6.1-79.2", "100.0"]
    assert shown[5:7] == ["1", "28.6"]  # one unparsed answer; WER 2/7
    assert row.replies["c1"] == 3.5 and row.replies["dnsmos"] is None
    assert shown[-1] == NOT_COMPUTED
    assert to_csv([row]).splitlines()[1].startswith("S,33.3,6.1-79.2,100.0")
    assert "--" in to_latex([row]) and "33.3" in to_latex([row])


def test_every_board_figure_carries_n_of_n() -> None:
    # S answered 3 of 4 understanding and 2 of 2 reasoning questions, transcribed 1 of 2 deliveries,
    # and has C1 on 2 of its 3 expected replies.
    expected = BoardExpectations(questions={"understanding": 4, "reasoning": 2}, transcripts=2, replies=3)
    (row,) = build_board(
        ["S"],
        ANSWERS,
        [("S", "I left the keys", "I left the keys")],
        [("S", "c1", 4.0), ("S", "c1", 3.0)],
        expected,
    )
    assert (row.understanding.coverage.text, row.reasoning.coverage.text) == ("3/4", "2/2")
    assert (row.wer_coverage.text, row.reply_coverage["c1"].text, row.reply_coverage["ves"].text) == (
        "1/2",
        "2/3",
        "0/3",
    )
    shown = dict(zip(HEADINGS, cells_with_coverage(row), strict=True))
    assert shown["Understanding acc. (%)"] == ("33.3", "3/4")
    assert shown["Understanding 95% CI"][1] == ""
    exported = next(csv.DictReader(io.StringIO(to_csv([row]))))
    assert (exported["Understanding acc. (%) n/N"], exported["C1 context fit n/N"]) == ("3/4", "2/3")
    latex = to_latex([row])
    assert r"S & 33.3$^{\dagger}$ & 100.0 &" in latex
    assert r"S Understanding acc. (\%) 3/4" in latex and "Reasoning acc. (\\%) 2/2" not in latex
    assert (
        "Expected of every system: 4 understanding and 2 reasoning questions, 2 transcripts, 3 replies"
        in latex
    )
