"""The audio steps: user voices per emotion (eSpeak or a speech server), the session voice kept, errors dropped."""

from __future__ import annotations

from pathlib import Path

from annotation.labelling.schema import check_perception, script_words
from ml.builder.config import BuildConfig
from ml.builder.models import BuildDialogue, BuildSample
from ml.builder.steps.audio_steps import AudioStepContext, consistency, perception, user_audio
from ml.core.training_records import read_wav
from tests.support.fake_speech_server import running_speech_server
from webapp.storage import read_media

ENDPOINTS = [{"base_url": "http://llm/v1", "model": "m"}]


def _sample(pk: int, emotion: str, intensity: str, voice: str = "en-gb", **extra: object) -> BuildSample:
    return BuildSample(
        pk=pk,
        text="I waited all day and nobody came.",
        emotion=emotion,
        intensity=intensity,
        voice={"voice": voice},
        **extra,
    )


def speech_server_context(base_url: str) -> AudioStepContext:
    """The audio steps' context for a build voiced by an OpenAI-compatible speech server."""
    config = {"endpoints": ENDPOINTS, "tts_backend": "openai", "tts_base_url": base_url, "voices": ["nova"]}
    return AudioStepContext(BuildConfig.from_json(config))


def test_espeak_voices_an_angry_query_faster_than_a_sad_one(media_root: Path) -> None:
    context = AudioStepContext(BuildConfig.from_json({"endpoints": ENDPOINTS}))
    angry, sad = user_audio([_sample(1, "angry", "high"), _sample(2, "sad", "high")], context)
    assert angry.kept and sad.kept
    assert angry.fields["voice"]["rate_wpm"] > sad.fields["voice"]["rate_wpm"]
    assert angry.fields["audio_seconds"] < sad.fields["audio_seconds"]
    samples, rate = read_wav(read_media(angry.fields["user_audio_key"]))
    assert round(len(samples) / rate, 3) == angry.fields["audio_seconds"]


def test_every_turn_of_a_dialogue_speaks_with_the_session_voice(media_root: Path) -> None:
    context = AudioStepContext(BuildConfig.from_json({"endpoints": ENDPOINTS}))
    dialogue = BuildDialogue(voice={"voice": "en-us+f3"})
    turns = [_sample(n, "sad", "medium", voice="en-gb", dialogue=dialogue, turn=n) for n in (1, 2, 3)]
    results = user_audio(turns, context)
    assert {result.fields["voice"]["voice"] for result in results} == {"en-us+f3"}


def test_a_speech_server_gets_the_voice_and_an_emotion_instruction(media_root: Path) -> None:
    with running_speech_server() as server:
        [result] = user_audio(
            [_sample(1, "fear", "high", voice="nova")], speech_server_context(server.base_url)
        )
        sent = server.requests[0].json
    assert result.kept and result.fields["voice"]["backend"] == "openai"
    assert (sent["voice"], sent["instructions"]) == ("nova", "Speak as a person feeling high fear.")


def test_a_failing_speech_server_drops_the_sample_as_a_tts_error(media_root: Path) -> None:
    with running_speech_server(status=500) as server:
        [result] = user_audio(
            [_sample(1, "fear", "high", voice="nova")], speech_server_context(server.base_url)
        )
    assert (result.kept, result.reason) == (False, "tts_error")


def test_espeak_speaks_the_stressed_word_with_emphasis(media_root: Path) -> None:
    context = AudioStepContext(BuildConfig.from_json({"endpoints": ENDPOINTS}))
    plain, stressed, unknown = user_audio(
        [
            _sample(1, "sad", "medium"),
            _sample(2, "sad", "medium", stressed_word="nobody"),
            _sample(3, "sad", "medium", stressed_word="elsewhere"),
        ],
        context,
    )
    # the emphasised word is drawn out (every reading is SSML, so emphasis is all that differs),
    # and the settings say which word
    assert stressed.fields["voice"]["emphasis"] == "nobody"
    assert stressed.fields["audio_seconds"] > plain.fields["audio_seconds"] + 0.03
    # a word the query does not hold is not emphasised: the plain reading (eSpeak NG varies it by a
    # few samples from call to call)
    assert plain.fields["voice"]["emphasis"] == unknown.fields["voice"]["emphasis"] == ""
    assert abs(unknown.fields["audio_seconds"] - plain.fields["audio_seconds"]) < 0.03


def test_a_speech_server_is_asked_to_stress_the_word(media_root: Path) -> None:
    with running_speech_server() as server:
        [result] = user_audio(
            [_sample(1, "fear", "high", voice="nova", stressed_word="waited")],
            speech_server_context(server.base_url),
        )
        sent = server.requests[0].json
    assert result.fields["voice"]["emphasis"] == "waited"
    assert sent["instructions"] == "Speak as a person feeling high fear. Stress the word 'waited'."


def test_perception_labels_the_word_the_audio_stressed(media_root: Path) -> None:
    # given a sad query voiced with its stressed word, and one without
    context = AudioStepContext(BuildConfig.from_json({"endpoints": ENDPOINTS}))
    stressed = _sample(1, "sad", "medium", stressed_word="nobody", topic_path="Work / Layoffs")
    plain = _sample(2, "sad", "medium", topic_path="Work / Layoffs")
    # when they go through the user audio, consistency and perception stages
    for stage in (user_audio, consistency):
        for sample, result in zip((stressed, plain), stage([stressed, plain], context), strict=True):
            for name, value in result.fields.items():
                setattr(sample, name, value)
    with_stress, without = perception([stressed, plain], context)
    # then the stressed word is heard against the neutral reading and labelled
    assert with_stress.fields["perception"]["stressed_words"] == ["nobody"]
    assert without.fields["perception"]["stressed_words"] == []
    assert check_perception(with_stress.fields["perception"], words=script_words(stressed.text)) == []
