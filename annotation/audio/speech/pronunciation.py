"""Pronunciations for script words the aligner's dictionary lacks, from eSpeak NG's letter-to-sound
rules (issue 39, eighth pass).

The CMU dictionary in pocketsphinx's wheel lacks names, rare and archaic words ("glutton",
"niggarding", "Priya"). Before, such a word was left out of the alignment, so the speech it takes
fell outside the script's words: a right take read as if it said something more than its script
(on a held-out real reading of a sonnet, a line with three such words was flagged in 18 of 28
takes). eSpeak NG spells any English word in its own phoneme mnemonics (`synthesis.phonemes`);
`arpabet` maps them onto the acoustic model's 39 phones, and the aligner adds the word to its
decoders' dictionary before aligning.

Pure: the mapping only. The table covers eSpeak NG's English phonemes (en-us, en-gb); a symbol it
does not know is skipped, and a spelling with no phone left gives no pronunciation.
"""

from __future__ import annotations

# eSpeak NG mnemonic -> ARPAbet phones (stress dropped: the acoustic model has none).
_PHONES: dict[str, tuple[str, ...]] = {
    # vowels and diphthongs, r-coloured ones as the vowel and R
    "a": ("AE",),
    "aa": ("AE",),
    "a#": ("AH",),
    "a2": ("AH",),
    "A:": ("AA",),
    "A": ("AA",),
    "A@": ("AA", "R"),
    "aI": ("AY",),
    "aI@": ("AY", "ER"),
    "aI3": ("AY", "ER"),
    "aU": ("AW",),
    "aU@": ("AW", "ER"),
    "e": ("EH",),
    "E": ("EH",),
    "E2": ("EH",),
    "e@": ("EH", "R"),
    "eI": ("EY",),
    "i": ("IY",),
    "i:": ("IY",),
    "i@": ("IH", "R"),
    "i@3": ("IH", "R"),
    "I": ("IH",),
    "I2": ("IH",),
    "I#": ("IH",),
    "I2#": ("IH",),
    "0": ("AA",),
    "0#": ("AA",),
    "O": ("AO",),
    "O:": ("AO",),
    "O@": ("AO", "R"),
    "o@": ("AO", "R"),
    "OI": ("OY",),
    "oU": ("OW",),
    "oU#": ("OW",),
    "U": ("UH",),
    "U@": ("UH", "R"),
    "u": ("UW",),
    "u:": ("UW",),
    "V": ("AH",),
    "@": ("AH",),
    "@2": ("AH",),
    "@5": ("AH",),
    "@L": ("AH", "L"),
    "3": ("ER",),
    "3:": ("ER",),
    # consonants
    "p": ("P",),
    "b": ("B",),
    "t": ("T",),
    "t#": ("T",),
    "d": ("D",),
    "d#": ("D",),
    "k": ("K",),
    "g": ("G",),
    "?": ("T",),  # a glottal stop stands for a t ("glutton")
    "f": ("F",),
    "v": ("V",),
    "T": ("TH",),
    "D": ("DH",),
    "s": ("S",),
    "z": ("Z",),
    "S": ("SH",),
    "Z": ("ZH",),
    "h": ("HH",),
    "x": ("K",),
    "C": ("HH",),
    "tS": ("CH",),
    "dZ": ("JH",),
    "m": ("M",),
    "n": ("N",),
    "N": ("NG",),
    "l": ("L",),
    "r": ("R",),
    "r-": ("R",),
    "w": ("W",),
    "j": ("Y",),
    # syllabic consonants take a reduced vowel before them
    "n-": ("AH", "N"),
    "l-": ("AH", "L"),
    "m-": ("AH", "M"),
}
_LONGEST = max(len(symbol) for symbol in _PHONES)
# Stress, syllable, length-variant and pause marks that carry no phone.
_MARKS = frozenset("',_|;!=%")


def arpabet(mnemonics: str) -> list[str]:
    """Return the ARPAbet phones of eSpeak NG phoneme mnemonics ("gl'V?n-" -> G L AH T AH N),
    matching the longest known symbol at each point; unknown symbols and marks are skipped."""
    text = "".join(" " if char in _MARKS else char for char in mnemonics)
    phones: list[str] = []
    at = 0
    while at < len(text):
        for size in range(min(_LONGEST, len(text) - at), 0, -1):
            symbol = text[at : at + size]
            if symbol in _PHONES:
                phones.extend(_PHONES[symbol])
                at += size
                break
        else:
            at += 1  # a space, or a symbol the table does not know
    return phones
