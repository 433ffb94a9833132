"""A small synthetic task where the emotion is carried by prosody alone (EchoEval's audio-dominant case).

Every utterance is one of a few emotionally neutral sentences, spoken by eSpeak NG with the pitch,
speaking rate and energy of one of four emotions, by one of several speakers (an eSpeak voice with
its own base pitch and tempo). The words never say how the speaker feels, so a model that answers
the emotion right has listened to the prosody. Speakers are split: the held-out ones (other
voices, other base pitches) are never trained on, so test accuracy measures prosody, not voice.

The gold output of an utterance (``gold_output``) is EchoChat's four spans, all fixed by the
emotion: a perception naming the prosody cues and the emotion, theory-of-mind reasoning, the
strategies with the fitting speech style, and a short response.

Audio is generated once and cached under ``<var>/synthetic_prosody/`` (``ECHOSTUDIO_VAR_DIR``, else
the repository's ``var/``), keyed by everything that shapes it, so reruns skip synthesis.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from annotation.audio.synthesis import synthesize
from ml.core.speech.inputs import SAMPLE_RATE, resample
from webapp.lib.output_format import render_output, render_reasoning, render_strategy
from webapp.lib.vocabulary import ANGRY, HAPPY, NEUTRAL, SAD

PROMPT = "Listen to the speaker, reason about how they feel, then respond with empathy."
EMOTIONS: tuple[str, ...] = (NEUTRAL, HAPPY, SAD, ANGRY)
# Neutral words: nothing in the text hints at a feeling.
SENTENCES: tuple[str, ...] = (
    "The train leaves at seven.",
    "I put the keys on the table.",
    "We are meeting on Tuesday.",
    "The shop closes at nine.",
    "She called me this morning.",
    "The letter came today.",
)


@dataclass(frozen=True)
class Prosody:
    """How an emotion shifts a speaker's delivery: eSpeak pitch points, a tempo factor, a gain."""

    pitch_shift: int
    tempo: float
    gain: float
    description: str


# Roughly the acoustic profiles of the basic emotions: happy high and quick, sad low, slow and
# soft, angry fast and loud, neutral in the middle.
PROSODY: dict[str, Prosody] = {
    NEUTRAL: Prosody(0, 1.0, 1.0, "Pitch: medium. Rate: steady. Energy: moderate."),
    HAPPY: Prosody(28, 1.2, 1.4, "Pitch: high. Rate: quick. Energy: bright."),
    SAD: Prosody(-22, 0.7, 0.45, "Pitch: low. Rate: slow. Energy: soft."),
    ANGRY: Prosody(8, 1.35, 2.4, "Pitch: raised. Rate: fast. Energy: loud."),
}


@dataclass(frozen=True)
class Speaker:
    """An eSpeak voice with its own base pitch (0-100) and speaking rate (words per minute)."""

    name: str
    voice: str
    base_pitch: int
    base_rate: int


TRAIN_SPEAKERS: tuple[Speaker, ...] = (
    Speaker("us-mid", "en-us", 50, 170),
    Speaker("gb-low", "en-gb", 38, 160),
    Speaker("m3-high", "en+m3", 58, 180),
    Speaker("f3-mid", "en-us+f3", 52, 165),
    Speaker("scot-low", "en-gb-scotland", 42, 175),
    Speaker("carib-high", "en-029", 60, 160),
)
# Other voices at base pitches and rates between and beside the training ones.
TEST_SPEAKERS: tuple[Speaker, ...] = (
    Speaker("f2-held-out", "en+f2", 46, 172),
    Speaker("rp-held-out", "en-gb-x-rp", 55, 158),
    Speaker("clan-held-out", "en-gb-x-gbclan", 40, 178),
)


@dataclass(frozen=True)
class Gold:
    """The reference spans for one emotion (what SFT imitates and the RL scorer compares with)."""

    perception: str
    context: str
    latent_need: str
    core_demand: str
    constraints: str
    strategies: tuple[str, ...]
    speech_style: str
    response: str

    def reasoning(self) -> str:
        return render_reasoning(self.context, self.latent_need, self.core_demand, self.constraints)

    def strategy(self) -> str:
        return render_strategy(self.strategies, self.speech_style)

    def output(self) -> str:
        return render_output(self.perception, self.reasoning(), self.strategy(), self.response)


_CONTEXT = "the words are plain news."
GOLD: dict[str, Gold] = {
    NEUTRAL: Gold(
        f"{PROSODY[NEUTRAL].description} Emotion: neutral.",
        _CONTEXT,
        "to share facts.",
        "a clear reply.",
        "keep it short.",
        ("information",),
        "calm",
        "Thanks, noted.",
    ),
    HAPPY: Gold(
        f"{PROSODY[HAPPY].description} Emotion: happy.",
        _CONTEXT,
        "to share joy.",
        "warm interest.",
        "match the mood.",
        ("affirmation",),
        "excited",
        "That is great news!",
    ),
    SAD: Gold(
        f"{PROSODY[SAD].description} Emotion: sad.",
        _CONTEXT,
        "comfort.",
        "to be heard.",
        "no quick advice.",
        ("emotional validation", "reassurance"),
        "comforting",
        "I am here with you.",
    ),
    ANGRY: Gold(
        f"{PROSODY[ANGRY].description} Emotion: angry.",
        _CONTEXT,
        "to be taken seriously.",
        "acknowledgement.",
        "stay calm.",
        ("acknowledgement", "de-escalation"),
        "calm",
        "I hear you, that is unfair.",
    ),
}


@dataclass(frozen=True)
class Utterance:
    """One synthetic user turn: 16 kHz mono float32 audio, its emotion, who spoke and what."""

    item_id: str
    audio: np.ndarray
    emotion: str
    speaker: str
    sentence: str

    @property
    def gold(self) -> Gold:
        return GOLD[self.emotion]


@dataclass(frozen=True)
class ProsodyTask:
    """The train split (training speakers) and the test split (held-out speakers)."""

    train: list[Utterance]
    test: list[Utterance]

    @property
    def chance(self) -> float:
        """Return the accuracy of guessing the emotion at random (the classes are balanced)."""
        return 1.0 / len(EMOTIONS)


def speak(sentence: str, emotion: str, speaker: Speaker, jitter: random.Random) -> np.ndarray:
    """Return the sentence in the speaker's voice with the emotion's prosody, 16 kHz float32.

    Each utterance gets a little random pitch, rate and gain jitter, so no two takes of a class
    are identical; leading and trailing silence is trimmed.
    """
    prosody = PROSODY[emotion]
    pitch = int(np.clip(speaker.base_pitch + prosody.pitch_shift + jitter.randint(-4, 4), 0, 100))
    rate = int(np.clip(speaker.base_rate * prosody.tempo * jitter.uniform(0.93, 1.07), 80, 450))
    speech = synthesize(sentence, rate_wpm=rate, pitch=pitch, voice=speaker.voice)
    samples = speech.samples.astype(np.float32) / 32768.0
    samples = samples * prosody.gain * jitter.uniform(0.85, 1.15)
    voiced = np.flatnonzero(np.abs(samples) > 0.01)
    if voiced.size:
        samples = samples[voiced[0] : voiced[-1] + 1]
    clipped: np.ndarray = np.clip(resample(samples, speech.sample_rate, SAMPLE_RATE), -1.0, 1.0).astype(
        np.float32
    )
    return clipped


def _split(speakers: tuple[Speaker, ...], takes: int, seed: int, prefix: str) -> list[Utterance]:
    jitter = random.Random(seed)
    utterances: list[Utterance] = []
    for speaker in speakers:
        for emotion in EMOTIONS:
            for take in range(takes):
                sentence = SENTENCES[(take + EMOTIONS.index(emotion)) % len(SENTENCES)]
                audio = speak(sentence, emotion, speaker, jitter)
                item_id = f"{prefix}-{speaker.name}-{emotion}-{take}"
                utterances.append(Utterance(item_id, audio, emotion, speaker.name, sentence))
    return utterances


def default_cache_dir() -> Path:
    """Return ``<var>/synthetic_prosody``: ``ECHOSTUDIO_VAR_DIR`` when set, else the repository's var/."""
    var = os.environ.get("ECHOSTUDIO_VAR_DIR") or Path(__file__).resolve().parents[3] / "var"
    return Path(var) / "synthetic_prosody"


def _cache_key(takes_train: int, takes_test: int, seed: int) -> str:
    shape = {
        "takes": [takes_train, takes_test],
        "seed": seed,
        "emotions": EMOTIONS,
        "sentences": SENTENCES,
        "prosody": {name: asdict(value) for name, value in PROSODY.items()},
        "speakers": [asdict(speaker) for speaker in (*TRAIN_SPEAKERS, *TEST_SPEAKERS)],
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]


def build_task(
    takes_train: int = 6, takes_test: int = 4, seed: int = 0, cache_dir: Path | None = None
) -> ProsodyTask:
    """Return the task with ``takes_*`` utterances per speaker and emotion, from the cache when there.

    Defaults: 6 x 4 x 6 = 144 training and 3 x 4 x 4 = 48 test utterances.
    """
    directory = cache_dir if cache_dir is not None else default_cache_dir()
    path = directory / f"task-{_cache_key(takes_train, takes_test, seed)}.npz"
    if path.exists():
        return _load(path)
    task = ProsodyTask(
        train=_split(TRAIN_SPEAKERS, takes_train, seed, "train"),
        test=_split(TEST_SPEAKERS, takes_test, seed + 1, "test"),
    )
    directory.mkdir(parents=True, exist_ok=True)
    _save(task, path)
    return task


def _save(task: ProsodyTask, path: Path) -> None:
    arrays: dict[str, np.ndarray] = {}
    index: list[list[str]] = []
    for split, utterances in (("train", task.train), ("test", task.test)):
        for number, utterance in enumerate(utterances):
            key = f"{split}_{number}"
            arrays[key] = utterance.audio
            index.append(
                [split, key, utterance.item_id, utterance.emotion, utterance.speaker, utterance.sentence]
            )
    temporary = path.with_suffix(".partial.npz")
    arrays["index"] = np.array(json.dumps(index))
    np.savez_compressed(temporary, allow_pickle=False, **arrays)
    # A rename, so an interrupted run never leaves a truncated cache behind.
    temporary.replace(path)


def _load(path: Path) -> ProsodyTask:
    with np.load(path) as archive:
        index = json.loads(str(archive["index"]))
        splits: dict[str, list[Utterance]] = {"train": [], "test": []}
        for split, key, item_id, emotion, speaker, sentence in index:
            splits[split].append(Utterance(item_id, archive[key], emotion, speaker, sentence))
    return ProsodyTask(train=splits["train"], test=splits["test"])
