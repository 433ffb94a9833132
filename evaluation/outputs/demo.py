"""Demo systems with spoken replies for the recorded test-split demo items and for every turn of
every dialogue in the database, ready for judging and listening studies.

Each reply is spoken by eSpeak NG (`annotation.audio.synthesis`, the project's one synthesiser):
the EchoChat demo in a calm, slower voice, the generic system in a bright, hurried one, so a MOS
study's audio dimensions have a difference to hear. eSpeak's output varies slightly from run to
run, so a reply whose text is unchanged keeps the audio already stored: a second seed changes no
output and so drops no judgement. Dialogue turns are answered in rows named by dialogue and turn,
the shape a lab's multi-turn outputs come in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.demo.recording import DEMO_ITEMS, RECORDED_IDS
from annotation.recording.models import Item
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import ModelOutput, System
from webapp.lib.output_format import render_output, render_reasoning, render_strategy
from webapp.lib.vocabulary import TEST
from webapp.storage import read_media

DEMO_VERSION = "echoeval-v1"


@dataclass(frozen=True)
class DemoVoice:
    pitch: int  # eSpeak 0-100
    rate_wpm: int


class SpokenReplies:
    """An audio source (see evaluation.outputs.audio_sources) of WAV files held in memory."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self._files = files

    def names(self) -> frozenset[str]:
        return frozenset(self._files)

    def read(self, name: str) -> bytes:
        return self._files[name]


def _feeling(external_id: str) -> str:
    demo = next(demo for demo in DEMO_ITEMS if demo.external_id == external_id)
    return demo.variant or demo.emotion


def _echochat_reply(external_id: str) -> str:
    return f"It sounds like that left you feeling {_feeling(external_id)}. I'm here; do you want to tell me more?"


def _structured(external_id: str) -> str:
    demo = next(demo for demo in DEMO_ITEMS if demo.external_id == external_id)
    feeling = _feeling(external_id)
    return render_output(
        f"The voice sounds {feeling}, {demo.intensity} intensity. {demo.instructions}",
        render_reasoning(
            f"Something left the speaker feeling {feeling}.",
            "To be understood.",
            "Acknowledgement first.",
            "Avoid premature problem-solving.",
        ),
        render_strategy(["Emotional validation", "Reflection of feelings"], "calm"),
        _echochat_reply(external_id),
    )


def _dialogue_reply(turn: Item) -> str:
    feeling = turn.emotion_variant or turn.target_emotion
    return f"It sounds like you are feeling {feeling} now. I'm still with you; what happened after that?"


def _dialogue_structured(turn: Item) -> str:
    feeling = turn.emotion_variant or turn.target_emotion
    return render_output(
        f"Turn {turn.turn}: the voice sounds {feeling}, {turn.target_intensity} intensity.",
        render_reasoning(
            f"The conversation so far has left the speaker feeling {feeling}.",
            "To feel accompanied as things change.",
            "Acknowledge the change before anything else.",
            "Avoid repeating the last reply.",
        ),
        render_strategy([turn.expected_strategy or "Emotional validation"], "calm"),
        _dialogue_reply(turn),
    )


GENERIC_REPLY = "Here are five tips to feel better: sleep, exercise…"
DEMO_SYSTEMS: tuple[tuple[str, str, DemoVoice], ...] = (
    ("EchoChat (demo)", System.Category.OURS, DemoVoice(pitch=42, rate_wpm=150)),
    ("Generic speech LLM (demo)", System.Category.GENERAL, DemoVoice(pitch=75, rate_wpm=220)),
)


def _spoken(system: System, replies: dict[str, str], voice: DemoVoice) -> SpokenReplies:
    """Return each row's reply as speech: the stored audio when its text is unchanged, else new."""
    stored = {
        output.item.external_id: output
        for output in ModelOutput.objects.for_version(DEMO_VERSION)
        .filter(system=system)
        .exclude(response_audio_key="")
        .select_related("item")
    }
    spoken: dict[str, bytes] = {}
    synthesised: dict[str, bytes] = {}  # one synthesis per distinct reply
    for external_id, reply in replies.items():
        previous = stored.get(external_id)
        if previous is not None and previous.response_text == reply:
            spoken[f"{external_id}.wav"] = read_media(previous.response_audio_key)
            continue
        if reply not in synthesised:
            speech = synthesize(reply, pitch=voice.pitch, rate_wpm=voice.rate_wpm)
            synthesised[reply] = to_wav_bytes(speech.samples, speech.sample_rate)
        spoken[f"{external_id}.wav"] = synthesised[reply]
    return SpokenReplies(spoken)


def seed_demo_outputs() -> int:
    """Create the two demo systems and import their spoken outputs; return how many outputs exist."""
    test_ids = set(
        Item.objects.filter(external_id__in=RECORDED_IDS, split=TEST).values_list("external_id", flat=True)
    )
    recorded = sorted(test_ids)
    turns = list(Item.objects.dialogue_turns().select_related("dialogue"))
    total = 0
    for name, category, voice in DEMO_SYSTEMS:
        system, _ = System.objects.get_or_create(
            name=name, defaults={"category": category, "version": "demo"}
        )
        if system.text_only:  # demo databases from before the replies were spoken
            system.text_only = False
            system.save(update_fields=["text_only"])
        ours = category == System.Category.OURS
        replies = {
            external_id: _echochat_reply(external_id) if ours else GENERIC_REPLY for external_id in recorded
        }
        replies.update({turn.external_id: _dialogue_reply(turn) if ours else GENERIC_REPLY for turn in turns})
        rows: list[dict[str, object]] = [
            {"item_id": external_id, "output": _structured(external_id) if ours else GENERIC_REPLY}
            for external_id in recorded
        ]
        rows += [
            {
                "dialogue_id": turn.dialogue.external_id,  # type: ignore[union-attr]
                "turn": turn.turn,
                "output": _dialogue_structured(turn) if ours else GENERIC_REPLY,
            }
            for turn in turns
        ]
        jsonl = "\n".join(json.dumps(row) for row in rows).encode()
        report = import_outputs(system, DEMO_VERSION, jsonl, _spoken(system, replies, voice))
        if not report.imported:
            raise RuntimeError(f"demo outputs of {name} were refused: {report.errors}")
        total += system.outputs.count()
    return total
