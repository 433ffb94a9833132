"""A small set in EchoMind's released layout, written here so every test reads the same files; and an
environment case with an accepted neutral take, for the mix."""

from __future__ import annotations

import json
from typing import Any

from annotation.recording.models import Take
from evaluation.echomind.deliveries import create_delivery_set, ensure_default_taxonomy
from evaluation.echomind.models import Delivery
from tests.factories import RecordingFactory, speech_like_wav, stored_wav, tiny_wav
from webapp.models import User


def audio_name(case: int, attribute: str, topic: str, role: str) -> str:
    return f"id_{case}_{attribute}_{topic}_{role}.wav"


def echomind_files(with_audio: bool = True) -> dict[str, bytes]:
    """Return {path: bytes}: two paralinguistic cases (one with all three deliveries), one speaker
    case (no neutral), three understanding and two reasoning questions, and their audio."""
    para: list[dict[str, Any]] = [
        {
            "id": "id_1",
            "topic": "weather",
            "text": "The forecast says it will rain tomorrow.",
            "attribute": "sad_tone",
            "alternative_attribute": "happy_tone",
            "audio": {
                role: audio_name(1, "sad_tone", "weather", role)
                for role in ("target", "neutral", "alternative")
            },
        },
        {
            "id": "id_2",
            "topic": "work",
            "text": "I finished the report this afternoon.",
            "attribute": "whispering",
            "alternative_attribute": "",
            "audio": {role: audio_name(2, "whispering", "work", role) for role in ("target", "neutral")},
        },
    ]
    speaker: list[dict[str, Any]] = [
        {
            "id": "id_3",
            "topic": "travel",
            "text": "The train leaves at nine.",
            "attribute": "child",
            "alternative_attribute": "elderly",
            "audio": {role: audio_name(3, "child", "travel", role) for role in ("target", "alternative")},
        }
    ]
    options = ["Happy", "Sad", "Angry", "Neutral"]
    understanding = [
        _question("u1", audio_name(1, "sad_tone", "weather", "target"), "What is the speaker's emotion?", options, "B", "emotion"),
        _question("u2", audio_name(1, "sad_tone", "weather", "neutral"), "What is the speaker's emotion?", options, "D", "emotion"),
        _question("u3", audio_name(3, "child", "travel", "target"), "What is the speaker's age group?", ["Child", "Adult", "Elderly"], "A", "age group"),
    ]  # fmt: skip
    reasoning = [
        _question("r1", audio_name(1, "sad_tone", "weather", "target"), "What does the speaker most likely need?", ["Comfort", "Directions", "A joke"], "A", "speaker intent"),
        _question("r2", audio_name(2, "whispering", "work", "target"), "Why might the speaker whisper?", ["Others are asleep", "They are angry"], "A", "preceding event"),
    ]  # fmt: skip
    files = {
        "script_info_paralinguistic.json": _dumps(para),
        "script_info_speaker.json": _dumps(speaker),
        "MCQ/understanding.json": _dumps(understanding),
        "MCQ/reasoning.json": _dumps(reasoning),
    }
    if with_audio:
        for number, case in enumerate([*para, *speaker]):
            for offset, name in enumerate(case["audio"].values()):
                files[f"audio/{name}"] = tiny_wav(0.8, 180.0 + 20 * number + 5 * offset)
    return files


def _question(
    qid: str, audio: str, text: str, options: list[str], answer: str, qtype: str
) -> dict[str, object]:
    return {
        "question_id": qid,
        "audio": audio,
        "question": text,
        "options": options,
        "answer": answer,
        "type": qtype,
    }


def _dumps(document: list[dict[str, Any]]) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def environment_case() -> Delivery:
    """Return the target delivery of a fresh environment case (rain, its alternative wind)."""
    ensure_default_taxonomy()
    case = create_delivery_set(
        case_id="id_7",
        script_type="environment",
        topic="home",
        text="I am home.",
        attribute="rain",
        alternative="wind",
    )
    return case.deliveries.get(role=Delivery.Role.TARGET)


def record_neutral(target: Delivery, actor: User) -> Take:
    """Give the target's case an accepted neutral take by `actor` (what a mix starts from)."""
    neutral = target.delivery_set.deliveries.get(role=Delivery.Role.NEUTRAL)
    recording = RecordingFactory.create(
        item=neutral.item, actor=actor, audio_key=stored_wav(speech_like_wav())
    )
    neutral.item.recording = recording
    neutral.item.save()
    return recording
