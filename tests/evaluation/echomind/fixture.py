"""A small set in EchoMind's released layout, written here so every test reads the same files."""

from __future__ import annotations

import json
from typing import Any

from tests.factories import tiny_wav


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
