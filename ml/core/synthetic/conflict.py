"""A synthetic task where the words mislead and stage errors vary independently (issue #25).

Each item is a user turn: a transcript (put in the prompt, as an ASR transcript would be) and a
short synthetic voice, a harmonic tone whose pitch and energy carry the emotion and whose
syllable-like amplitude modulation carries a second cue, urgency (calm: slow, urgent: fast).

- The prosody is sampled independently of everything else: the emotion uniformly, the urgency
  uniformly, with per-item pitch, energy and rate jitter.
- The words are chosen from the emotion lexicon of a *word emotion*. In training it equals the
  spoken emotion with probability ``train_agreement`` (a word-emotion correlation a model can
  lean on); at test it never does (every test item is a text-prosody conflict item), so the
  correlation flips and a model that reads the words instead of listening fails.
- The gold spans: perception names the prosody cues and the emotion; reasoning's fields follow
  the emotion; the strategy follows the urgency alone; the speech style follows the emotion and
  the response both. So a rollout can hear the emotion right and the urgency wrong (perception
  right, strategy wrong), or the reverse, and a group's stage scores are not collinear.

Pure: numpy only, deterministic from the seed. Audio is 16 kHz mono float32.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from ml.core.synthetic.prosody import Gold
from webapp.lib.vocabulary import ANGRY, HAPPY, NEUTRAL, SAD

SAMPLE_RATE = 16_000
DURATION_SECONDS = 1.0
EMOTIONS: tuple[str, ...] = (NEUTRAL, HAPPY, SAD, ANGRY)
CALM, URGENT = "calm", "urgent"
URGENCIES: tuple[str, ...] = (CALM, URGENT)
# Short on purpose: every prompt and gold token costs CPU time in the benches, and a short fixed
# format is parsable after a few dozen SFT steps (the 146-token gold was not after 80).
INSTRUCTION = "Hear the voice, then reply."
# Words that say an emotion; the prosody may say another.
LEXICON: dict[str, tuple[str, ...]] = {
    NEUTRAL: ("the bus comes at nine", "i moved the chair", "the form is on the desk"),
    HAPPY: ("i won the prize today", "we got the house", "my test went great"),
    SAD: ("my dog died today", "i lost my job", "nobody came to my party"),
    ANGRY: ("they cheated me again", "he broke my phone", "you lied to me"),
}
# (f0 Hz, amplitude): sad low and soft, neutral mid, angry raised and loud, happy high.
VOICE: dict[str, tuple[float, float]] = {
    SAD: (110.0, 0.12),
    NEUTRAL: (155.0, 0.3),
    ANGRY: (210.0, 0.8),
    HAPPY: (290.0, 0.5),
}
# Syllable-like modulation rates (Hz) of the amplitude envelope, and the word perception uses.
RATE: dict[str, tuple[float, str]] = {CALM: (3.0, "slow"), URGENT: (9.0, "fast")}
_REASONING: dict[str, tuple[str, str, str]] = {
    NEUTRAL: ("facts", "a reply", "be brief"),
    HAPPY: ("joy", "interest", "match mood"),
    SAD: ("comfort", "be heard", "no advice"),
    ANGRY: ("respect", "acknowledgement", "stay calm"),
}
# The strategy depends on the urgency only: an urgent speaker wants action, a calm one attention.
STRATEGY: dict[str, tuple[str, ...]] = {CALM: ("emotional validation",), URGENT: ("problem solving",)}
STYLE: dict[str, str] = {NEUTRAL: "calm", HAPPY: "excited", SAD: "comforting", ANGRY: "calm"}
_RESPONSE: dict[str, str] = {NEUTRAL: "Noted.", HAPPY: "Great!", SAD: "So sorry.", ANGRY: "Unfair."}
_RESPONSE_TAIL: dict[str, str] = {CALM: " Tell me more.", URGENT: " Let us fix it."}


@dataclass(frozen=True)
class ConflictItem:
    """One turn: the audio, what it says (``emotion``, ``urgency``), what the words say."""

    item_id: str
    audio: np.ndarray
    emotion: str
    urgency: str
    word_emotion: str
    words: str

    @property
    def conflict(self) -> bool:
        """Whether the words say another emotion than the voice."""
        return self.word_emotion != self.emotion

    @property
    def prompt(self) -> str:
        return f'{INSTRUCTION} Transcript: "{self.words}"'

    @property
    def gold(self) -> Gold:
        return gold_for(self.emotion, self.urgency)


@dataclass(frozen=True)
class ConflictTask:
    train: list[ConflictItem]
    test: list[ConflictItem]


def gold_for(emotion: str, urgency: str) -> Gold:
    """Return the gold spans of a turn with this spoken emotion and urgency."""
    need, demand, constraints = _REASONING[emotion]
    return Gold(
        perception=f"Emotion: {emotion}. Rate: {RATE[urgency][1]}.",
        context="mixed cues",
        latent_need=need,
        core_demand=demand,
        constraints=constraints,
        strategies=STRATEGY[urgency],
        speech_style=STYLE[emotion],
        response=_RESPONSE[emotion] + _RESPONSE_TAIL[urgency],
    )


def voice(emotion: str, urgency: str, rng: random.Random) -> np.ndarray:
    """Return one second of a jittered harmonic tone with the emotion's pitch and energy, and
    an amplitude envelope modulated at the urgency's rate."""
    f0, amplitude = VOICE[emotion]
    rate, _ = RATE[urgency]
    f0 *= rng.uniform(0.92, 1.08)
    amplitude *= rng.uniform(0.8, 1.2)
    rate *= rng.uniform(0.85, 1.15)
    t = np.arange(int(SAMPLE_RATE * DURATION_SECONDS)) / SAMPLE_RATE
    vibrato = 1.0 + 0.01 * np.sin(2 * np.pi * 5.0 * t + rng.uniform(0, 2 * np.pi))
    phase = 2 * np.pi * f0 * np.cumsum(vibrato) / SAMPLE_RATE
    tone = sum((0.6**k) * np.sin((k + 1) * phase) for k in range(4))
    envelope = 0.5 - 0.5 * np.cos(2 * np.pi * rate * t + rng.uniform(0, 2 * np.pi))
    noise = np.random.default_rng(rng.getrandbits(32)).normal(0.0, 0.003, t.size)
    return np.clip(amplitude * envelope * tone / 1.6 + noise, -1.0, 1.0).astype(np.float32)


def _item(
    prefix: str, number: int, emotion: str, urgency: str, word_emotion: str, rng: random.Random
) -> ConflictItem:
    words = rng.choice(LEXICON[word_emotion])
    return ConflictItem(
        f"{prefix}-{number}", voice(emotion, urgency, rng), emotion, urgency, word_emotion, words
    )


def build_conflict_task(
    train_size: int = 160, test_size: int = 48, train_agreement: float = 0.75, seed: int = 0
) -> ConflictTask:
    """Return the task: training words agree with the voice with probability ``train_agreement``;
    test words never agree (each emotion and urgency equally often in both splits)."""
    rng = random.Random(seed)
    train = []
    for number in range(train_size):
        emotion = EMOTIONS[number % len(EMOTIONS)]
        urgency = URGENCIES[(number // len(EMOTIONS)) % len(URGENCIES)]
        others = [other for other in EMOTIONS if other != emotion]
        word_emotion = emotion if rng.random() < train_agreement else rng.choice(others)
        train.append(_item("train", number, emotion, urgency, word_emotion, rng))
    test = []
    for number in range(test_size):
        emotion = EMOTIONS[number % len(EMOTIONS)]
        urgency = URGENCIES[(number // len(EMOTIONS)) % len(URGENCIES)]
        word_emotion = rng.choice([other for other in EMOTIONS if other != emotion])
        test.append(_item("test", number, emotion, urgency, word_emotion, rng))
    return ConflictTask(train, test)
