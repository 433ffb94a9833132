"""The words of the EchoEval benchmark, defined once: scenarios, emotions, intensities, splits,
label values, the default strategy taxonomy and the strategy names the rubric matches by.

Django-free, so the item-file reader, the label schema, the rubrics and the torch code read the same
tuples as the model choices (annotation.recording.models builds its TextChoices from these
constants). Data migrations keep frozen copies of what these were when they ran.
"""

from __future__ import annotations

# The five EchoEval scenarios (paper section 4, Table 10); Table 2 calls audio-dominant "Neutral"
# and high-arousal "Intense".
IMPLICIT = "implicit"
AUDIO_DOMINANT = "audio-dominant"
HIGH_AROUSAL = "high-arousal"
MODALITY_CONFLICT = "modality-conflict"
EMOTION_SHIFT = "emotion-shift"
SCENARIOS: tuple[str, ...] = (IMPLICIT, AUDIO_DOMINANT, HIGH_AROUSAL, MODALITY_CONFLICT, EMOTION_SHIFT)

# The seven primary emotions an item targets and a perception label names; the fine-grained
# variant ("anxiety" within fear) is free text.
HAPPY = "happy"
SAD = "sad"
ANGRY = "angry"
SURPRISE = "surprise"
DISGUST = "disgust"
FEAR = "fear"
NEUTRAL = "neutral"
EMOTIONS: tuple[str, ...] = (HAPPY, SAD, ANGRY, SURPRISE, DISGUST, FEAR, NEUTRAL)

LOW = "low"
MEDIUM = "medium"
HIGH = "high"
INTENSITIES: tuple[str, ...] = (LOW, MEDIUM, HIGH)
DEFAULT_INTENSITY = MEDIUM

# The speaker gender the analysis drafts (annotation.audio.voice_drafts).
FEMALE, MALE = "female", "male"

TEST = "test"
DEV = "dev"
TRAIN = "train"
SPLITS: tuple[str, ...] = (TEST, DEV, TRAIN)
# A new item belongs to the benchmark until someone moves it to training data.
DEFAULT_SPLIT = TEST
# The recordings of EchoMind's deliveries (evaluation.echomind) are items too, so that actors record
# them and reviewers judge them like any script, but they are no part of EchoEval: their own set,
# never one of EchoEval's splits (an item file cannot name it; no EchoEval job, queue filter or
# leaderboard takes it for test, dev or train).
ECHOMIND_DELIVERIES = "echomind"
ITEM_SPLITS: tuple[str, ...] = (*SPLITS, ECHOMIND_DELIVERIES)

# Values of the perception label document (annotation.labelling.schema).
POLARITIES: tuple[str, ...] = ("positive", "negative", "neutral", "mixed")
PROSODY_LEVELS: tuple[str, ...] = ("low", "normal", "high")
INTONATIONS: tuple[str, ...] = ("rising", "falling", "rising-falling", "falling-rising", "flat")
# "" means the item has no modality conflict.
CONFLICT_KINDS: tuple[str, ...] = ("", "sarcasm", "self-mockery", "other")

# Cross-turn labels of a dialogue's later turns (annotation.labelling.dialogue.cross_turn): how
# the user's emotion moved since their previous turn, and whether the assistant's last strategy helped.
INTENSIFIED = "intensified"
EASED = "eased"
UNCHANGED = "unchanged"
SHIFTED = "shifted"  # to another emotion
EMOTION_CHANGES: tuple[str, ...] = (INTENSIFIED, EASED, UNCHANGED, SHIFTED)
STRATEGY_OUTCOMES: tuple[str, ...] = ("yes", "partly", "no")

# The strategy taxonomy (slug, name) a fresh database is seeded with; admins may rename or retire
# strategies afterwards, so code that needs the current names reads the Strategy table instead.
DEFAULT_STRATEGIES: tuple[tuple[str, str], ...] = (
    ("emotional-validation", "Emotional validation"),
    ("reassurance", "Reassurance"),
    ("reflection-of-feelings", "Reflection of feelings"),
    ("questioning", "Questioning"),
    ("restatement", "Restatement"),
    ("self-disclosure", "Self-disclosure"),
    ("information", "Information"),
    ("suggestions-guidance", "Suggestions / guidance"),
    ("cognitive-reframing", "Cognitive reframing"),
)

# The canonical strategy names the rubric matches by (paper B.3 / C.2: validation, reassurance,
# guidance, reframing ... after PsyQA / ESConv) and the phrasings models and annotators use for them,
# so "Validate her feelings" and "emotional validation" count as the same strategy. The classes are
# coarser than DEFAULT_STRATEGIES (reflection of feelings counts as validation, restatement as
# active listening); every default slug and name is one of the phrasings, so gold references, which
# hold slugs, meet model outputs, which hold free text, on the same names.
STRATEGY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "emotional_validation": (
        "validation",
        "emotional validation",
        "validate feelings",
        "validate emotions",
        "validating feelings",
        "acknowledge feelings",
        "acknowledging feelings",
        "emotional acknowledgement",
        "emotional acknowledgment",
        "reflection of feelings",
        "reflect feelings",
        "empathic reflection",
        "empathize",
        "empathise",
    ),
    "reassurance": (
        "reassurance",
        "reassure",
        "affirmation and reassurance",
        "affirmation",
        "comfort",
        "comforting",
        "soothing",
    ),
    "guidance": (
        "guidance",
        "practical guidance",
        "advice",
        "give advice",
        "providing suggestions",
        "suggestions",
        "suggest",
        "problem solving",
        "problem-solving",
        "actionable steps",
        "action planning",
        "suggestions / guidance",
    ),
    "cognitive_reframing": (
        "cognitive reframing",
        "reframing",
        "reframe",
        "positive reframing",
        "perspective shift",
        "offer perspective",
        "perspective taking",
    ),
    "active_listening": (
        "active listening",
        "listening",
        "restatement",
        "restatement or paraphrasing",
        "paraphrasing",
        "paraphrase",
        "reflective listening",
    ),
    "questioning": (
        "question",
        "questions",
        "questioning",
        "ask questions",
        "open questions",
        "open-ended questions",
        "clarifying questions",
        "gentle inquiry",
        "exploration",
    ),
    "information": (
        "information",
        "providing information",
        "information sharing",
        "psychoeducation",
    ),
    "self_disclosure": ("self disclosure", "self-disclosure", "share own experience"),
    "encouragement": ("encouragement", "encourage", "motivation", "empowerment", "empower"),
    "shared_joy": ("shared joy", "share joy", "celebrate", "celebration", "congratulate", "congratulations"),
    "de_escalation": ("de-escalation", "de escalation", "calming", "calm down", "grounding", "breathing"),
    "humor": ("humor", "humour", "playful", "light humor", "playful engagement"),
}


def label(value: str) -> str:
    """Return the display label of a vocabulary value ("audio-dominant" -> "Audio-dominant")."""
    return value.capitalize()


def choice(value: str) -> tuple[str, str]:
    """Return the (value, label) pair a Django choices member is declared with."""
    return value, label(value)
