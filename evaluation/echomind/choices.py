"""Reading a system's multiple-choice answer from free text (pure): the documented patterns only.

EchoMind's prompts ask for "The answer is: [X]". A reply is read by the first of these that fits,
and an answer is never guessed: a reply that fits none, names a letter beyond the options, or
states two different letters is unparseable (counted, and scored as wrong):

1. "The answer is: [X]" and its loose spellings ("answer is X", "Answer: (X)", "answer: X.");
2. the whole reply is one letter, bracketed or not ("B", "[B]", "(B).");
3. the reply opens with a letter and a separator ("B. Sad", "(B) sad", "B: sad", "B) sad", "B - sad"; "B sad" is not);
4. the whole reply is one option's text (case, spaces and end punctuation aside).

`choice_prompt` is the question as a system is asked it (the options lettered, the answer format
spelled out); `key_problem` (with `options_problem`) is the one rule for a well-formed question,
imported or authored in the studio.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

# A letter: bracketed in any case, or a bare capital (a bare "a" is the article: "answer is a guess").
_BRACKETED = r"\[\s*([A-Za-z])\s*\]|\(\s*([A-Za-z])\s*\)"
_LETTER = r"(?:" + _BRACKETED + r"|([A-Z]))(?![A-Za-z])"
STATED = re.compile(r"(?i:\banswer\s*(?:is)?\s*[:：]?)\s*" + _LETTER)
LONE = re.compile(r"^\W*" + _LETTER + r"\W*$")
# An opening capital needs a separator ("B. sad", "B) sad", "B - sad"): "I think" is a word.
OPENING = re.compile(r"^\s*(?:(?:" + _BRACKETED + r")\s*[.:]?|([A-Z])\s*[.:)]|([A-Z])\s+[-–])\s*\S")
PATTERNS = ("stated", "lone letter", "opening letter", "option text")
MIN_OPTIONS, MAX_OPTIONS = 2, 26


@dataclass(frozen=True)
class ChoiceReading:
    letter: str | None  # "A", "B", ...; None when unparseable
    pattern: str  # which documented pattern read it, or why it could not be read

    @property
    def parsed(self) -> bool:
        return self.letter is not None


def letters_for(options: Sequence[str]) -> str:
    """Return the option letters of a question: A, B, C ... one per option."""
    if len(options) > len(string.ascii_uppercase):
        raise ValueError("at most 26 options")
    return string.ascii_uppercase[: len(options)]


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).strip(string.punctuation + " ")


def options_problem(options: Sequence[str]) -> str | None:
    """Return why these cannot be a question's options, or None."""
    if not MIN_OPTIONS <= len(options) <= MAX_OPTIONS:
        return f"a question needs {MIN_OPTIONS} to {MAX_OPTIONS} options"
    if any(not _normal(option) for option in options):
        return "an option is empty"
    if len({_normal(option) for option in options}) < len(options):
        # An answer that repeats an option's text must name one option (pattern 4).
        return "two options say the same"
    return None


def key_problem(options: Sequence[str], answer: str) -> str | None:
    """Return why a question with these options and answer key is not well formed, or None."""
    if problem := options_problem(options):
        return problem
    letters = letters_for(options)
    if len(answer) != 1 or answer not in letters:
        return f"the answer must be one of {', '.join(letters)}"
    return None


def choice_prompt(question: str, options: Sequence[str]) -> str:
    """Return the question as a system is asked it: lettered options and EchoMind's answer format."""
    lines = [
        question.strip(),
        *(f"{letter}. {option}" for letter, option in zip(letters_for(options), options, strict=True)),
    ]
    lines.append('Choose one option. End with "The answer is: [X]", X the letter of your choice.')
    return "\n".join(lines)


def read_choice(text: str, options: Sequence[str]) -> ChoiceReading:
    """Return the option letter a reply chooses among `options`, or why none can be read."""
    letters = letters_for(options)
    stated = {"".join(groups).upper() for groups in STATED.findall(text)}
    if stated:
        if len(stated) > 1:
            return ChoiceReading(None, "several letters stated")
        letter = stated.pop()
        return ChoiceReading(letter, "stated") if letter in letters else ChoiceReading(None, "no such option")
    for pattern, name in ((LONE, "lone letter"), (OPENING, "opening letter")):
        match = pattern.match(text)
        if match:
            letter = "".join(group or "" for group in match.groups()).upper()
            return ChoiceReading(letter, name) if letter in letters else ChoiceReading(None, "no such option")
    wanted = _normal(text)
    same = [letter for letter, option in zip(letters, options, strict=True) if _normal(option) == wanted]
    if wanted and len(same) == 1:
        return ChoiceReading(same[0], "option text")
    return ChoiceReading(None, "unparseable")
