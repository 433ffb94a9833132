"""Pronunciations for words the aligner's dictionary lacks, from eSpeak NG (issue 39, eighth pass)."""

from __future__ import annotations

import pytest

from annotation.audio.speech import alignment as alignment_module
from annotation.audio.speech.alignment import align, check_script, spelled
from annotation.audio.speech.pronunciation import arpabet
from annotation.audio.synthesis import phonemes
from tests.annotation.audio.speech.espeak import spoken


def test_espeak_mnemonics_map_onto_the_models_phones() -> None:
    # stress marks dropped, the glottal stop as a t, a syllabic n with its reduced vowel
    assert arpabet("gl'V?n-") == ["G", "L", "AH", "T", "AH", "N"]
    # the longest symbol wins: "tS" is one phone, "aI" one vowel, "3:" one r-coloured vowel
    assert arpabet("tS'3:l") == ["CH", "ER", "L"]
    assert arpabet("b'aI") == ["B", "AY"]
    # a symbol the table does not know is skipped; nothing known gives nothing
    assert arpabet("m'a*kst") == ["M", "AE", "K", "S", "T"]
    assert arpabet("'_,") == []


def test_espeak_spells_words_the_dictionary_lacks() -> None:
    assert phonemes("glutton").startswith("gl")
    assert spelled("niggarding") == ("N", "IH", "G", "ER", "D", "IH", "NG")


def test_a_script_with_words_the_dictionary_lacks_aligns_every_word_and_matches() -> None:
    # Before, "glutton" and "Priya" were left out of the alignment: the speech they take fell
    # outside the script's words, and the right take read as if it said more than its script.
    script = "Priya called the glutton a liar"
    samples, _ = spoken(script)
    alignment = align(samples, script)

    assert alignment.unknown_words == ()
    assert [word.text for word in alignment.words] == ["priya", "called", "the", "glutton", "a", "liar"]
    assert check_script(alignment).verdict == "matches"
    assert (
        check_script(align(samples, "My brother lost his keys on the way home")).verdict == "does_not_match"
    )


def test_a_word_that_cannot_be_spelled_stays_unknown_and_the_rest_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # eSpeak NG failing, or a phone the acoustic model does not have: the word is left out, as a
    # missing word was before pronunciations were added, and the take is still aligned and checked
    spelled_by_espeak = alignment_module.spelled

    def fails(word: str) -> tuple[str, ...]:
        if word == "zorbleck":
            raise RuntimeError("eSpeak NG failed to initialise")
        return ("QQ",) if word == "flimwick" else spelled_by_espeak(word)

    monkeypatch.setattr(alignment_module, "spelled", fails)
    samples, _ = spoken("Please call Stella tomorrow morning")
    alignment = align(samples, "Please call zorbleck flimwick Stella tomorrow morning")

    assert set(alignment.unknown_words) == {"zorbleck", "flimwick"}
    assert [word.text for word in alignment.words] == ["please", "call", "stella", "tomorrow", "morning"]
