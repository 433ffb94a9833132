"""EchoMind's vocal-attribute taxonomy as data (pure): the shipped default and its JSONL reading.

Three coarse dimensions, twelve fine ones, 45 attributes: the paper's speaker information (gender
and age as the release names them), its 19 paralinguistic cues and 21 environment sounds. The
abstract counts 39 vocal attributes without naming them; the names here follow EchoMind's released
code and demo recordings. A lab may edit or replace them (admin, JSONL import); this is only the
default a fresh database starts from. A release's own spellings map onto them (`AttributeNames`).

Also EchoMind's task data: the question types of levels 1 and 2 (a lab's imported questions may add
their own), and the level-3 conversation prompts of each strength.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from evaluation.echomind.scoring import REASONING, UNDERSTANDING

SPEAKER, PARALINGUISTIC, ENVIRONMENT = "speaker", "paralinguistic", "environment"
COARSE_DIMENSIONS = (SPEAKER, PARALINGUISTIC, ENVIRONMENT)
# Speaker attributes are who speaks, so a speaker delivery has no neutral counterpart.
WITHOUT_NEUTRAL = (SPEAKER,)
CODE = re.compile(r"[a-z][a-z0-9_]{0,47}")


@dataclass(frozen=True)
class Attribute:
    code: str
    label: str
    coarse: str
    fine: str


def _rows(coarse: str, fine: str, labels: str) -> list[Attribute]:
    return [
        Attribute(re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_"), label, coarse, fine)
        for label in labels.split(", ")
    ]


DEFAULT_TAXONOMY: tuple[Attribute, ...] = (
    *_rows(SPEAKER, "gender", "Male, Female"),
    *_rows(SPEAKER, "age", "Child, Adult, Elderly"),
    *_rows(PARALINGUISTIC, "physiological state", "Hoarse voice, Vocal fatigue, Breathless, Sobbing"),
    *_rows(
        PARALINGUISTIC,
        "emotion",
        "Happy tone, Sad tone, Surprised tone, Angry tone, Fearful tone, Disgusted tone",
    ),
    *_rows(PARALINGUISTIC, "volume", "Shouting, Whispering"),
    *_rows(PARALINGUISTIC, "speech rate", "Fast pace, Slow pace"),
    *_rows(PARALINGUISTIC, "non-verbal expression", "Cough, Sigh, Laughter, Yawn, Moan"),
    *_rows(ENVIRONMENT, "weather", "Wind, Thunderstorm, Rain"),
    *_rows(ENVIRONMENT, "location", "Driving, Subway, Sea waves, Basketball"),
    *_rows(
        ENVIRONMENT, "human sounds", "Applause, Cheering, Crowd chatter, Children playing, Children speaking"
    ),
    *_rows(ENVIRONMENT, "sudden event", "Dogs barking, Alarm clock, Ringtone, Honking"),
    *_rows(
        ENVIRONMENT,
        "background music",
        "Happy music, Funny music, Sad music, Exciting music, Angry music",
    ),
)


UNDERSTANDING_TYPES = (
    "coarse description",
    "gender",
    "age group",
    "voice style",
    "emotion",
    "pace",
    "non-verbal expression",
    "background sound",
)
REASONING_TYPES = (
    "several speakers",
    "laughter sentiment",
    "shouting sentiment",
    "audio-text sentiment consistency",
    "response style",
    "personalised recommendation",
    "contextual suggestion",
    "preceding event",
    "speaker intent",
    "most empathetic response",
)
QUESTION_TYPES: dict[str, tuple[str, ...]] = {UNDERSTANDING: UNDERSTANDING_TYPES, REASONING: REASONING_TYPES}

# Level 3: the one-turn reply under three prompt strengths; the enhanced prompt names the coarse
# dimension whose cue the reply should use.
CONVERSATION_PROMPT = "Reply to the speaker in one or two spoken sentences."
ENHANCED_CUE = {
    SPEAKER: "who is speaking (their gender and age)",
    PARALINGUISTIC: "how they speak (their emotion, voice, pace and any non-verbal sounds)",
    ENVIRONMENT: "the sounds around them",
}


def conversation_prompt(strength: str, coarse: str) -> str:
    """Return the reply prompt of a strength (none, basic, enhanced) for a case of this dimension."""
    if strength == "none":
        return CONVERSATION_PROMPT
    if strength == "basic":
        return f"{CONVERSATION_PROMPT} Take into account how it was said, not only the words."
    if strength == "enhanced":
        return f"{CONVERSATION_PROMPT} Notice {ENHANCED_CUE[coarse]}, and let your reply fit it."
    raise ValueError(f"unknown prompt strength {strength!r}")


def has_neutral(coarse: str) -> bool:
    """Return whether a script of this coarse dimension is also recorded neutrally."""
    return coarse not in WITHOUT_NEUTRAL


def parse_taxonomy_jsonl(lines: Iterable[str]) -> tuple[list[Attribute], list[str]]:
    """Return the attributes of a JSONL file ({"code", "label", "coarse", "fine"} a line) and its
    problems, one sentence per bad line; a file with problems should be refused whole."""
    attributes: list[Attribute] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"line {number}: not JSON")
            continue
        if not isinstance(row, dict):
            problems.append(f"line {number}: not a JSON object")
            continue
        code, label = str(row.get("code", "")).strip(), str(row.get("label", "")).strip()
        coarse, fine = str(row.get("coarse", "")).strip(), str(row.get("fine", "")).strip()
        if not CODE.fullmatch(code):
            problems.append(f"line {number}: code must be lower-case letters, digits and _ ({code!r})")
        elif code in seen:
            problems.append(f"line {number}: {code} appears twice")
        elif coarse not in COARSE_DIMENSIONS:
            problems.append(f"line {number}: coarse must be one of {', '.join(COARSE_DIMENSIONS)}")
        elif not label or not fine:
            problems.append(f"line {number}: label and fine are required")
        else:
            seen.add(code)
            attributes.append(Attribute(code, label, coarse, fine))
    return attributes, problems


def to_jsonl(attributes: Iterable[Attribute]) -> str:
    """Return the taxonomy as the JSONL `parse_taxonomy_jsonl` reads."""
    return "".join(
        json.dumps({"code": a.code, "label": a.label, "coarse": a.coarse, "fine": a.fine}) + "\n"
        for a in attributes
    )


# --- The names a release gives attributes, mapped onto the taxonomy (pure)
#
# EchoMind's published files name an attribute in their own words: the demo recordings say `angry`,
# `fast`, `tired`, `breath`, `shout`, `elderly`, `female`, `sound of wind blowing`, `sound of
# thunderstorm and thunder` (id_<n>_<attribute>_<topic>_<role>.wav). A name is matched after
# `name_key` (case, spacing, underscores and hyphens do not matter; a leading "sound of" and a
# trailing "sound" are dropped) against every attribute's code, label and the synonyms below.
# Synonyms name codes of DEFAULT_TAXONOMY; a lab's own attributes match by code and label.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "male": ("man", "male voice", "male speaker"),
    "female": ("woman", "female voice", "female speaker"),
    "child": ("kid", "children's voice", "child voice", "young child"),
    "adult": ("middle aged", "middle-aged", "grown-up", "young adult"),
    "elderly": ("old", "elder", "senior", "old age", "aged", "elderly person"),
    "hoarse_voice": ("hoarse", "hoarseness", "husky voice"),
    "vocal_fatigue": ("tired", "fatigue", "fatigued", "exhausted", "weary"),
    "breathless": ("breath", "breathing", "breathy", "panting", "out of breath", "heavy breathing"),
    "sobbing": ("sob", "crying", "cry", "weeping", "tearful"),
    "happy_tone": ("happy", "happiness", "joy", "joyful", "cheerful"),
    "sad_tone": ("sad", "sadness", "sorrow", "sorrowful"),
    "surprised_tone": ("surprised", "surprise"),
    "angry_tone": ("angry", "anger", "mad"),
    "fearful_tone": ("fearful", "fear", "scared", "afraid"),
    "disgusted_tone": ("disgusted", "disgust"),
    "shouting": ("shout", "shouted", "yelling", "yell", "loud"),
    "whispering": ("whisper", "whispered"),
    "fast_pace": ("fast", "fast speech", "quick", "rapid", "fast speaking"),
    "slow_pace": ("slow", "slow speech", "slow speaking"),
    "cough": ("coughing", "coughs"),
    "sigh": ("sighing", "sighs"),
    "laughter": ("laugh", "laughing", "laughs"),
    "yawn": ("yawning", "yawns"),
    "moan": ("moaning", "groan", "groaning"),
    "wind": ("wind blowing", "windy", "blowing wind", "strong wind"),
    "thunderstorm": ("thunder", "thunderstorm and thunder", "storm", "thunder and lightning"),
    "rain": ("raining", "rainfall", "rain falling", "heavy rain"),
    "driving": ("car driving", "in a car", "car interior", "traffic"),
    "subway": ("metro", "underground", "subway train", "train"),
    "sea_waves": ("waves", "ocean waves", "sea", "ocean", "beach waves"),
    "basketball": ("basketball game", "basketball court", "playing basketball", "bouncing basketball"),
    "applause": ("clapping", "applauding", "clap"),
    "cheering": ("cheer", "cheers", "crowd cheering"),
    "crowd_chatter": ("crowd", "chatter", "crowd talking", "people talking", "crowd noise"),
    "children_playing": ("kids playing", "children at play"),
    "children_speaking": ("children talking", "kids talking", "kids speaking"),
    "dogs_barking": ("dog barking", "dog bark", "barking", "barking dogs", "dog"),
    "alarm_clock": ("alarm", "alarm ringing", "alarm clock ringing"),
    "ringtone": ("phone ringing", "ringing phone", "phone ring", "telephone ringing", "ring tone"),
    "honking": ("car horn", "horn", "car honking", "horn honking", "honk"),
    "happy_music": ("cheerful music",),
    "funny_music": ("comic music", "comedic music"),
    "sad_music": ("melancholy music",),
    "exciting_music": ("excited music", "energetic music"),
    "angry_music": ("intense music",),
}
_SOUND_OF = re.compile(r"^(?:(?:the|a)_)?sounds?_of_(?:(?:the|a|an)_)?|_sounds?$")


def name_key(name: str) -> str:
    """Return the form names are compared in: lower-case words joined by _, without "sound of"."""
    key = re.sub(r"[^a-z0-9]+", "_", name.lower().replace("'", "")).strip("_")
    return _SOUND_OF.sub("", key) or key


class UnknownName(ValueError):
    """A release's attribute name that matches nothing in the taxonomy; the message names the
    nearest known names."""

    def __init__(self, name: str, nearest: list[str]) -> None:
        self.name, self.nearest = name, nearest
        close = f"nearest: {', '.join(nearest)}" if nearest else "no known name is close"
        super().__init__(f"the attribute {name!r} matches no attribute of the taxonomy ({close})")


class AttributeNames:
    """Map a release's attribute names onto the attributes (code, label) a taxonomy holds."""

    def __init__(self, attributes: Iterable[tuple[str, str]]) -> None:
        self.labels: dict[str, str] = {}
        self.by_key: dict[str, str] = {}
        pairs = list(attributes)
        for code, label in pairs:
            self.labels[code] = label
        # Codes and labels first, so no synonym can take a name an attribute itself bears.
        for code, label in pairs:
            self.by_key.setdefault(name_key(code), code)
            self.by_key.setdefault(name_key(label), code)
        for code, synonyms in SYNONYMS.items():
            if code in self.labels:
                for synonym in synonyms:
                    self.by_key.setdefault(name_key(synonym), code)

    def code_of(self, name: str) -> str:
        """Return the code the name means; raise UnknownName (with the nearest names) for none."""
        key = name_key(name)
        if key in self.by_key:
            return self.by_key[key]
        nearest: list[str] = []
        for close in difflib.get_close_matches(key, list(self.by_key), n=6, cutoff=0.6):
            code = self.by_key[close]
            shown = f"{self.labels[code]} ({code})"
            if shown not in nearest:
                nearest.append(shown)
        raise UnknownName(name, nearest[:3])
