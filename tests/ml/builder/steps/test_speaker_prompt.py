"""Speaker-prompted TTS for dialogue turns (paper B.5), against a real local speech server.

The server records each request's JSON; a server that takes a reference voice must get, for turns
2-5, the previous turn's very audio (base64 WAV) and words, and for turn 1 nothing; a server
configured without reference-voice support gets no prompt for any turn.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from ml.builder.config import BuildConfig, ConfigProblem
from ml.builder.models import Build, BuildDialogue, BuildSample
from ml.builder.steps.audio_steps import AudioStepContext, consistency, user_audio
from tests.support.fake_speech_server import running_speech_server
from webapp.storage import read_media

ENDPOINTS = [{"base_url": "http://llm/v1", "model": "m"}]
TEXTS = (
    "My landlord is selling the flat.",
    "He gave us one month to leave.",
    "I have nowhere to go with the kids.",
    "Maybe my sister can take us for a while.",
    "Thank you, I think I will call her tonight then.",
)


def context(base_url: str, speaker_prompt: bool) -> AudioStepContext:
    config = {
        "endpoints": ENDPOINTS,
        "tts_backend": "openai",
        "tts_base_url": base_url,
        "voices": ["nova"],
        "tts_speaker_prompt": speaker_prompt,
    }
    return AudioStepContext(BuildConfig.from_json(config))


def turns(dialogue: BuildDialogue, numbers: tuple[int, ...] = (1, 2, 3, 4, 5)) -> list[BuildSample]:
    return [
        BuildSample(
            pk=number,
            text=TEXTS[number - 1],
            emotion="sad",
            intensity="medium",
            dialogue=dialogue,
            turn=number,
            voice={"voice": "en-gb"},
        )
        for number in numbers
    ]


def test_turns_2_to_5_are_voiced_with_the_previous_turns_audio_and_turn_1_without(media_root: Path) -> None:
    dialogue = BuildDialogue(voice={"voice": "nova"})
    # words of different counts, so each turn's audio (a tone as long as its words) is its own
    with running_speech_server(seconds_per_word=0.1) as server:
        results = user_audio(turns(dialogue), context(server.base_url, speaker_prompt=True))
        sent = [request.json for request in server.requests]

    assert all(result.kept for result in results)
    assert len(sent) == 5
    assert "reference_audio" not in sent[0] and "reference_text" not in sent[0]
    assert "speaker_prompt_turn" not in results[0].fields["voice"]
    for turn in range(2, 6):
        previous = read_media(results[turn - 2].fields["user_audio_key"])
        request = sent[turn - 1]
        assert base64.b64decode(str(request["reference_audio"])) == previous
        assert request["reference_text"] == TEXTS[turn - 2]
        assert results[turn - 1].fields["voice"]["speaker_prompt_turn"] == turn - 1
    # every turn's audio differs from the others, so "the previous turn's" means that one turn
    assert len({read_media(result.fields["user_audio_key"]) for result in results}) == 5


def test_a_server_without_reference_voice_support_gets_no_prompt(media_root: Path) -> None:
    dialogue = BuildDialogue(voice={"voice": "nova"})
    with running_speech_server(seconds_per_word=0.1) as server:
        results = user_audio(turns(dialogue), context(server.base_url, speaker_prompt=False))
        sent = [request.json for request in server.requests]

    assert all(result.kept for result in results) and len(sent) == 5
    assert not any("reference_audio" in request or "reference_text" in request for request in sent)


@pytest.mark.django_db
def test_a_turn_voiced_after_its_predecessor_was_stored_gets_the_stored_audio_and_so_does_its_neutral_reading(
    media_root: Path,
) -> None:
    # given a dialogue whose turn 1 was voiced by an earlier run (a unit may redo later turns only)
    build = Build.objects.create(name="prompted", seed=3, config={"endpoints": ENDPOINTS})
    dialogue = BuildDialogue.objects.create(build=build, external_id="D-1", prompt_variant="standard")
    with running_speech_server(seconds_per_word=0.1) as server:
        prompted = context(server.base_url, speaker_prompt=True)
        [first] = user_audio([BuildSample(build=build, dialogue=dialogue, turn=1, text=TEXTS[0])], prompted)
        BuildSample.objects.create(
            build=build,
            external_id="D-1-1",
            dialogue=dialogue,
            turn=1,
            text=TEXTS[0],
            user_audio_key=first.fields["user_audio_key"],
        )
        second = BuildSample.objects.create(
            build=build,
            external_id="D-1-2",
            dialogue=dialogue,
            turn=2,
            text=TEXTS[1],
            emotion="sad",
            intensity="high",
        )
        # when turn 2 alone is voiced, then read neutrally for the consistency check
        [voiced] = user_audio([second], prompted)
        second.voice, second.user_audio_key = voiced.fields["voice"], voiced.fields["user_audio_key"]
        consistency([second], prompted)
        sent = [request.json for request in server.requests]

    # then both of turn 2's readings carry turn 1's stored audio as the prompt
    stored = read_media(first.fields["user_audio_key"])
    assert [base64.b64decode(str(request["reference_audio"])) for request in sent[1:]] == [stored, stored]
    assert [request["reference_text"] for request in sent[1:]] == [TEXTS[0], TEXTS[0]]
    assert "Speak neutrally." in [request["instructions"] for request in sent[1:]]


def test_espeak_takes_no_reference_voice() -> None:
    with pytest.raises(ConfigProblem, match="tts_speaker_prompt needs the openai TTS backend"):
        BuildConfig.from_json({"endpoints": ENDPOINTS, "tts_speaker_prompt": True})
