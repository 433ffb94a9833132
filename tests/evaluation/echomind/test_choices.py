"""Reading multiple-choice answers: the documented patterns read, anything else is unparseable."""

from __future__ import annotations

import pytest

from evaluation.echomind.choices import choice_prompt, key_problem, read_choice

OPTIONS = ["Happy", "Sad", "Angry", "Neutral"]


@pytest.mark.parametrize(
    ("text", "letter", "pattern"),
    [
        ("The answer is: [B]", "B", "stated"),
        ("Listening closely... The answer is: [C].", "C", "stated"),
        ("Answer: (A)", "A", "stated"),
        ("the answer is D", "D", "stated"),
        ("[D]", "D", "lone letter"),
        ("(b).", "B", "lone letter"),
        ("B. Sad", "B", "opening letter"),
        ("(c) angry", "C", "opening letter"),
        ("sad.", "B", "option text"),
    ],
)
def test_documented_patterns_are_read(text: str, letter: str, pattern: str) -> None:
    reading = read_choice(text, OPTIONS)
    assert (reading.letter, reading.pattern) == (letter, pattern)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("I think it sounds sad or maybe angry", "unparseable"),
        ("The answer is a tricky one", "unparseable"),  # "a" the article, not option A
        ("The answer is: [B]. On reflection the answer is A", "several letters stated"),
        ("The answer is: [F]", "no such option"),
        ("B sad", "unparseable"),
        ("", "unparseable"),
    ],
)
def test_anything_else_is_never_guessed(text: str, why: str) -> None:
    reading = read_choice(text, OPTIONS)
    assert (reading.letter, reading.pattern) == (None, why)


@pytest.mark.parametrize(
    ("options", "answer", "problem"),
    [
        (OPTIONS, "B", None),
        (OPTIONS, "E", "the answer must be one of A, B, C, D"),
        (OPTIONS, "BC", "the answer must be one of A, B, C, D"),
        (["Yes"], "A", "a question needs 2 to 26 options"),
        (["Yes", " "], "A", "an option is empty"),
        (["Sad", "sad."], "A", "two options say the same"),  # "sad" would name both
    ],
)
def test_one_rule_makes_a_question_well_formed(options: list[str], answer: str, problem: str | None) -> None:
    assert key_problem(options, answer) == problem


def test_a_question_is_asked_with_lettered_options_and_the_answer_format_the_parser_reads() -> None:
    prompt = choice_prompt("What is the speaker's emotion?", OPTIONS)
    assert prompt.splitlines()[:5] == [
        "What is the speaker's emotion?",
        "A. Happy",
        "B. Sad",
        "C. Angry",
        "D. Neutral",
    ]
    assert 'End with "The answer is: [X]"' in prompt
    assert read_choice("The answer is: [C]", OPTIONS).letter == "C"
