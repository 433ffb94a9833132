"""Demo EchoMind data for `manage.py seed_demo`: four cases voiced with eSpeak NG (voice variants
for speaker attributes, rate and pitch for emotion, the whisper variant, synthetic noise mixed in
for environment), their multiple-choice questions, and two demo systems' answers. Idempotent."""

from __future__ import annotations

import json
from typing import cast

import numpy as np

from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.audio.upload import normalise_upload
from annotation.demo.recording import _SilentProgress
from annotation.recording.models import Take
from annotation.recording.takes import analyze_take
from evaluation.echomind import layout
from evaluation.echomind.answers import import_answers
from evaluation.echomind.deliveries import mix_background
from evaluation.echomind.models import Delivery, DeliverySet
from evaluation.echomind.transfer import import_layout
from evaluation.outputs.models import System
from webapp.jobs import JobReporter
from webapp.models import User

# (case, type, topic, script, target, alternative, {role: (voice, rate, pitch) or a background})
Voice = tuple[str, int, int]
NEUTRAL_VOICE: Voice = ("en-us", 170, 50)
CASES: tuple[tuple[str, str, str, str, str, str, dict[str, Voice | str]], ...] = (
    ("id_901", "paralinguistic", "weather", "The forecast says it will rain tomorrow.", "sad_tone", "happy_tone",
     {"target": ("en-us", 120, 25), "neutral": ("en-us", 170, 50), "alternative": ("en-us", 210, 80)}),
    ("id_902", "paralinguistic", "work", "I finished the report this afternoon.", "whispering", "shouting",
     {"target": ("en-us+whisper", 160, 50), "neutral": ("en-us", 170, 50), "alternative": ("en-us", 200, 90)}),
    ("id_903", "speaker", "travel", "The train leaves at nine.", "child", "elderly",
     {"target": ("en-us+f3", 190, 95), "alternative": ("en-us+m7", 130, 15)}),
    ("id_904", "environment", "home", "I am going to make some tea.", "rain", "wind",
     {"target": "rain", "neutral": ("en-us", 170, 50), "alternative": "wind"}),
)  # fmt: skip
EMOTIONS = ["Happy", "Sad", "Angry", "Neutral"]
QUESTIONS = (
    ("em-u1", "understanding", "id_901", "target", "emotion", "What is the speaker's emotion?", EMOTIONS, "B"),
    ("em-u2", "understanding", "id_901", "neutral", "emotion", "What is the speaker's emotion?", EMOTIONS, "D"),
    ("em-u3", "understanding", "id_901", "alternative", "emotion", "What is the speaker's emotion?", EMOTIONS, "A"),
    ("em-u4", "understanding", "id_902", "target", "voice style", "How does the speaker speak?", ["Whispering", "Shouting", "Normally"], "A"),
    ("em-u5", "understanding", "id_903", "target", "age group", "What is the speaker's age group?", ["Child", "Adult", "Elderly"], "A"),
    ("em-u6", "understanding", "id_904", "target", "background sound", "What can be heard behind the voice?", ["Rain", "Wind", "Nothing"], "A"),
    ("em-r1", "reasoning", "id_901", "target", "speaker intent", "What does the speaker most likely need?", ["Comfort", "Directions", "A joke"], "A"),
    ("em-r2", "reasoning", "id_902", "target", "preceding event", "Why might the speaker whisper?", ["Others are asleep", "They won a prize"], "A"),
    ("em-r3", "reasoning", "id_904", "target", "contextual suggestion", "What would be a fitting suggestion?", ["Stay in and keep dry", "Go sunbathing"], "A"),
)  # fmt: skip
# The listening demo system hears the cue; the text-only one always answers as if neutral.
LISTENER = {"em-u1": "The answer is: [B]", "em-u2": "The answer is: [D]", "em-u3": "The answer is: [A]",
            "em-u4": "A", "em-u5": "The answer is: [C]", "em-u6": "The answer is: [A]",
            "em-r1": "The answer is: [A]", "em-r2": "(A) Others are asleep", "em-r3": "The answer is: [A]"}  # fmt: skip
TEXT_ONLY = {"em-u1": "The answer is: [D]", "em-u2": "The answer is: [D]", "em-u3": "The answer is: [D]",
             "em-u4": "The answer is: [C]", "em-u5": "The answer is: [B]", "em-u6": "It sounds calm to me",
             "em-r1": "The answer is: [B]", "em-r2": "The answer is: [B]", "em-r3": "The answer is: [A]"}  # fmt: skip


def _speech(text: str, voice: str, rate: int, pitch: int) -> bytes:
    speech = synthesize(text, rate_wpm=rate, pitch=pitch, voice=voice)
    return normalise_upload(to_wav_bytes(speech.samples, speech.sample_rate), "demo.wav").wav_bytes


def _noise(kind: str, seconds: float = 3.0) -> bytes:
    """Rain: bright white noise; wind: the same noise smoothed into a low rumble (seeded)."""
    rng = np.random.default_rng(28 if kind == "rain" else 29)
    noise = rng.standard_normal(int(16_000 * seconds))
    if kind == "wind":
        noise = np.convolve(noise, np.ones(64) / 8, mode="same")
    samples = (np.clip(noise, -3, 3) / 3 * 6000).astype(np.int16)
    return to_wav_bytes(samples, 16_000)


def seed_echomind_demo() -> int:
    """Create the demo cases, questions and two systems' answers; return how many cases exist."""
    files: dict[str, bytes] = {}
    cases = []
    for case_id, script_type, topic, text, target, alternative, voices in CASES:
        neutral_voice = voices.get("neutral", NEUTRAL_VOICE)
        neutral = _speech(text, *neutral_voice) if isinstance(neutral_voice, tuple) else b""
        audio = {}
        for role, how in voices.items():
            name = f"id_{case_id.removeprefix('id_')}_{target}_{topic}_{role}.wav"
            files[layout.AUDIO_DIR + name] = (
                _speech(text, *how) if isinstance(how, tuple) else mix_background(neutral, _noise(how), -12.0)
            )
            audio[role] = name
        cases.append(layout.CaseRow(case_id, script_type, topic, text, target, alternative, audio))
    for script_type in {case.script_type for case in cases}:
        rows = [case for case in cases if case.script_type == script_type]
        files[f"script_info_{script_type}.json"] = layout.dumps(layout.script_info_document(rows))
    audio_of = {(case.case_id, role): name for case in cases for role, name in case.audio.items()}
    for level, name in layout.MCQ_FILES.items():
        rows_q = [
            layout.QuestionRow(qid, level, audio_of[(case, role)], text, options, key, qtype)
            for qid, lvl, case, role, qtype, text, options, key in QUESTIONS
            if lvl == level
        ]
        files[name] = layout.dumps(layout.mcq_document(rows_q))
    if not DeliverySet.objects.filter(case_id=CASES[0][0]).exists():
        report = import_layout(files, User.objects.get(username="admin"))
        if report.problems:
            raise RuntimeError("; ".join(report.problems))
        # Measured like every demo take, so take pages show their contours.
        for take_id in Take.objects.filter(item__echomind_delivery__isnull=False).values_list(
            "pk", flat=True
        ):
            analyze_take(take_id, cast(JobReporter, _SilentProgress()))
    _seed_answers()
    return DeliverySet.objects.count()


def _seed_answers() -> None:
    for name, answers, heard_words in (
        ("EchoMind demo listener", LISTENER, 0),
        ("EchoMind demo text-only", TEXT_ONLY, 2),
    ):
        system, _ = System.objects.get_or_create(name=name, defaults={"text_only": "text" in name})
        lines = [json.dumps({"question_id": qid, "answer": text}) for qid, text in answers.items()]
        for delivery in Delivery.objects.filter(
            role=Delivery.Role.TARGET, delivery_set__case_id__startswith="id_9"
        ):
            words = delivery.delivery_set.text.split()
            transcript = " ".join(words[: len(words) - heard_words])
            lines.append(json.dumps({"delivery": delivery.audio_name(), "transcript": transcript}))
        report = import_answers(system, ("\n".join(lines) + "\n").encode())
        if report.problems:
            raise RuntimeError("; ".join(report.problems))
