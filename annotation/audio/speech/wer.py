"""Word error rate: the rule every EchoStudio WER follows (a spoken reply's, EchoMind's scoring):
lower case, punctuation dropped (apostrophes kept), errors by jiwer's alignment over the
reference's words.

Pure and light on purpose: EchoMind's scoring is loaded by every web process, which never runs
a recogniser (`recognition`, with numpy and pocketsphinx, runs in the audio job only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"[\w']+")


def words(text: str) -> list[str]:
    """Return the words WER compares: lower case, punctuation dropped (apostrophes kept)."""
    return [word.strip("'") for word in _WORD.findall(text.lower()) if word.strip("'")]


@dataclass(frozen=True)
class WordErrors:
    errors: int  # substitutions + deletions + insertions
    reference_words: int

    @property
    def rate(self) -> float:
        return self.errors / self.reference_words


def word_errors(reference: str, hypothesis: str) -> WordErrors:
    """Return the word errors of a transcript against its reference (jiwer's alignment)."""
    import jiwer  # loaded by scoring only, not by every page

    truth = words(reference)
    if not truth:
        raise ValueError("a reference transcript needs at least one word")
    heard = words(hypothesis)
    if not heard:
        return WordErrors(len(truth), len(truth))
    out = jiwer.process_words(" ".join(truth), " ".join(heard))
    return WordErrors(out.substitutions + out.deletions + out.insertions, len(truth))
