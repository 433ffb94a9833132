"""The offline emotion-consistency check hears arousal, and says it is the weaker method."""

from __future__ import annotations

import pytest

from annotation.audio.synthesis import synthesize, to_wav_bytes
from ml.builder.logic.consistency import (
    ACOUSTIC_METHOD,
    ConsistencyVerdict,
    acoustic_verdict,
    arousal_band,
    joint_verdict,
    measured_arousal,
)
from ml.builder.logic.voicing import NEUTRAL_PITCH, NEUTRAL_RATE_WPM, espeak_prosody, target_arousal
from ml.builder.steps.audio_steps import reading_features

TEXT = "I cannot believe they cancelled the whole trip at the very last minute again."


def _features(rate: int, pitch: int) -> dict:
    speech = synthesize(TEXT, rate_wpm=rate, pitch=pitch)
    return reading_features(to_wav_bytes(speech.samples, speech.sample_rate), TEXT)


def test_arousal_bands_follow_emotion_and_intensity() -> None:
    assert arousal_band(target_arousal("sad", "high")) == "low"
    assert arousal_band(target_arousal("angry", "high")) == "high"
    assert arousal_band(target_arousal("happy", "low")) == "mid"
    assert espeak_prosody("angry", "high")[0] > NEUTRAL_RATE_WPM > espeak_prosody("sad", "high")[0]


@pytest.mark.parametrize(("emotion", "expected"), [("angry", "high"), ("sad", "low")])
def test_espeak_voiced_emotions_are_heard_in_their_band(emotion: str, expected: str) -> None:
    baseline = _features(NEUTRAL_RATE_WPM, NEUTRAL_PITCH)
    verdict = acoustic_verdict(_features(*espeak_prosody(emotion, "high")), baseline, emotion, "high")
    assert (verdict.method, verdict.predicted, verdict.consistent) == (ACOUSTIC_METHOD, expected, True)
    assert verdict.confidence > 0.5


def test_a_sad_reading_of_an_angry_query_is_inconsistent() -> None:
    baseline = _features(NEUTRAL_RATE_WPM, NEUTRAL_PITCH)
    verdict = acoustic_verdict(_features(*espeak_prosody("sad", "high")), baseline, "angry", "high")
    assert (verdict.expected, verdict.predicted, verdict.consistent) == ("high", "low", False)


def test_no_measurement_means_no_confidence() -> None:
    assert measured_arousal({}, {"phones_per_second": 12.0}) is None
    verdict = acoustic_verdict({}, {}, "sad", "low")
    assert (verdict.consistent, verdict.confidence) == (False, 0.0)


def test_an_endpoint_classifier_keeps_only_its_confident_agreement() -> None:
    from ml.builder.logic.consistency import EndpointClassifier
    from tests.support.fake_chat_server import json_reply, running_chat_server, status_reply
    from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient

    speech = synthesize("I miss her.", rate_wpm=120, pitch=20)
    wav = to_wav_bytes(speech.samples, speech.sample_rate)
    replies = [
        json_reply({"emotion": "Sad", "confidence": 0.9}),
        json_reply({"emotion": "happy"}),
        status_reply(400),
    ]
    with running_chat_server(replies) as server:
        client = JudgeClient(ChatJudgeConfig(base_url=server.base_url, model="emotion-clf", max_retries=0))
        classifier = EndpointClassifier(client)
        agreed, disagreed, failed = (classifier.verdict(wav, "sad") for _ in range(3))
        sent = server.chat_requests[0].json
    assert isinstance(sent, dict)
    assert (agreed.consistent, agreed.confidence, agreed.method) == (True, 0.9, "endpoint:emotion-clf")
    assert (disagreed.consistent, disagreed.predicted, disagreed.confidence) == (False, "happy", 0.0)
    assert not failed.consistent
    assert sent["messages"][0]["content"][1]["type"] == "input_audio"


def _verdict(method: str, consistent: bool, confidence: float) -> ConsistencyVerdict:
    return ConsistencyVerdict(
        method, "sad", "sad" if consistent else "angry", confidence, consistent, {"p": 1.0}
    )


@pytest.mark.parametrize(
    ("verdicts", "consistent", "confidence"),
    [
        # both agree, the joint confidence is the lesser: a 0.5 threshold holds for each
        ((("a", True, 0.9), ("b", True, 0.6)), True, 0.6),
        # one disagrees: inconsistent however sure the other is
        ((("a", True, 0.99), ("b", False, 0.8)), False, 0.8),
        # both agree but one is unsure: consistent, and the threshold drops it as not confident
        ((("a", True, 0.95), ("b", True, 0.3)), True, 0.3),
    ],
)
def test_the_joint_rule_keeps_only_agreeing_confident_checks(
    verdicts: tuple[tuple[str, bool, float], ...], consistent: bool, confidence: float
) -> None:
    joint = joint_verdict([_verdict(*entry) for entry in verdicts])
    assert (joint.consistent, joint.confidence) == (consistent, confidence)
    assert joint.method == "joint(a + b)"
    assert joint.scores["a:confidence"] == verdicts[0][2] and joint.scores["b:p"] == 1.0


def test_one_check_is_its_own_verdict() -> None:
    single = _verdict("a", True, 0.7)
    assert joint_verdict([single]) is single
