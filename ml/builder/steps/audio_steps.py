"""The audio stages: user audio, emotion consistency, automatic perception, response audio.

User audio goes through the build's TTS backend (eSpeak NG offline, or an OpenAI-compatible speech
server) with the voice of the sample, or of the dialogue session for every turn of a dialogue, and
prosody (eSpeak) or an instruction (speech server) for the target emotion and intensity. A speech
server that takes a reference voice (`tts_speaker_prompt`) voices dialogue turns 2-5 with the
previous turn's audio as the speaker prompt (paper B.5), their neutral readings too. Audio is
stored under random media keys (``webapp.storage``), so a key says nothing about the sample.

The consistency stage reads each turn twice, as it was voiced and as the same voice reads the same
text neutrally, and measures both with the speech models (`reading_features`); the perception
stage labels the one against the other (`ml.builder.logic.speech_checks`).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings as django_settings

from annotation.audio.acoustics import analyze, scalar_features
from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.alignment import align
from annotation.audio.speech.rate import RATE_KEY, articulation_rate
from annotation.audio.speech.resampling import at_speech_rate
from annotation.audio.speech.speaker import speaker_embedding
from annotation.audio.synthesis import ssml_markup, synthesize, to_wav_bytes
from annotation.audio.tts import TtsError, TtsSettings, decode_wav, speak_in_style
from ml.builder.claims import SampleResult
from ml.builder.config import BuildConfig
from ml.builder.logic.consistency import EmotionClassifier, acoustic_verdict, joint_verdict
from ml.builder.logic.perception import perception_labels
from ml.builder.logic.speech_checks import (
    emphasis_agreement,
    rate_ratio,
    stressed_against_neutral,
    turn_similarities,
    word_prosody,
)
from ml.builder.logic.voicing import NEUTRAL_PITCH, NEUTRAL_RATE_WPM, espeak_prosody
from ml.builder.models import BuildSample
from ml.builder.stages import INCONSISTENT_EMOTION, MODALITY_CONFLICT, NOT_CONFIDENT, TTS_ERROR
from ml.core.training_records import read_wav
from webapp.lib.outbound import OutboundPolicy
from webapp.outbound import outbound_policy, settings_key
from webapp.storage import new_media_key, read_media, save_media


@dataclass
class AudioStepContext:
    config: BuildConfig
    api_key: str = ""
    # The configured classifiers by method ("endpoint", "local"); the acoustic check needs none.
    classifiers: dict[str, EmotionClassifier] = field(default_factory=dict)
    outbound: OutboundPolicy | None = None

    @classmethod
    def for_build(
        cls, config: BuildConfig, classifiers: dict[str, EmotionClassifier] | None = None
    ) -> AudioStepContext:
        """Return the context of a build's audio stages: the deployment's TTS key only when the
        build's TTS URL is ECHOSTUDIO_TTS_BASE_URL's own host, every call checked and pinned."""
        return cls(
            config,
            api_key=settings_key(
                config.tts_base_url, django_settings.TTS_API_KEY, django_settings.TTS_BASE_URL
            ),
            classifiers=dict(classifiers or {}),
            outbound=outbound_policy(),
        )


@dataclass(frozen=True)
class SpeakerPrompt:
    """The earlier turn a dialogue turn is voiced after (paper B.5): its audio, words and turn."""

    wav: bytes
    text: str
    turn: int
    audio_key: str


def _speak(
    text: str,
    voice: str,
    emotion: str,
    intensity: str,
    ctx: AudioStepContext,
    stressed_word: str = "",
    prompt: SpeakerPrompt | None = None,
) -> tuple[bytes, dict[str, Any]]:
    """Return WAV bytes of the user's words and the voice settings used; `stressed_word` is spoken
    with emphasis (the settings' "emphasis" names it when it was). A speech server that takes a
    reference voice (`tts_speaker_prompt`) is sent `prompt`'s audio as the speaker prompt."""
    config = ctx.config
    if config.tts_backend == "espeak":
        rate, pitch = espeak_prosody(emotion, intensity) if emotion else (NEUTRAL_RATE_WPM, NEUTRAL_PITCH)
        # Every reading goes through SSML, stressed or not, so the emphasis is all that differs.
        markup, stressed = ssml_markup(text, stressed_word)
        speech = synthesize(markup, rate_wpm=rate, pitch=pitch, voice=voice, ssml=True)
        return to_wav_bytes(speech.samples, speech.sample_rate), {
            "backend": "espeak",
            "voice": voice,
            "rate_wpm": rate,
            "pitch": pitch,
            "emphasis": stressed_word if stressed else "",
        }
    instruction = f"Speak as a person feeling {intensity} {emotion}." if emotion else "Speak neutrally."
    if stressed_word:
        instruction += f" Stress the word '{stressed_word}'."
    payload = {"model": config.tts_model, "input": text, "voice": voice, "response_format": "wav"}
    payload["instructions"] = instruction
    prompted = prompt if config.tts_speaker_prompt else None
    if prompted is not None:
        payload["reference_audio"] = base64.b64encode(prompted.wav).decode("ascii")
        payload["reference_text"] = prompted.text
    headers = {"Authorization": f"Bearer {ctx.api_key}"} if ctx.api_key else {}
    # Loaded on the first call: the web process imports the builder's steps and never speaks.
    import httpx

    from webapp.lib.pinned_http import http_client

    try:
        with http_client(ctx.outbound, timeout=120) as http:
            response = http.post(
                config.tts_base_url.rstrip("/") + "/audio/speech", json=payload, headers=headers
            )
    except httpx.HTTPError as exc:
        raise TtsError(f"the TTS server gave no answer: {exc}") from exc
    if response.status_code != 200:
        raise TtsError(f"the TTS server answered HTTP {response.status_code}")
    speech = decode_wav(response.content)
    return to_wav_bytes(speech.samples, speech.sample_rate), {
        "backend": "openai",
        "voice": voice,
        "model": config.tts_model,
        "instructions": instruction,
        "emphasis": stressed_word,
        **(
            {"speaker_prompt_turn": prompted.turn, "speaker_prompt_key": prompted.audio_key}
            if prompted is not None
            else {}
        ),
    }


def reading_features(wav: bytes, text: str) -> dict[str, Any]:
    """Return what the builder measures of one reading of `text`: the acoustic scalar features,
    phones per second over speech only (the aligned words; pauses excluded), the pauses, and each
    aligned word's length, pitch and energy (what stress is heard from)."""
    samples, rate = read_wav(wav)
    analysis = analyze(samples, rate)
    speech = at_speech_rate(samples, rate)
    alignment = align(speech, text, scored=False)  # timings only: no goodness against the phone loop
    activity = speech_activity(speech)
    phones = articulation_rate(alignment)
    return {
        **scalar_features(analysis),
        RATE_KEY: round(phones, 3) if phones else None,
        "pauses": {
            "count": len(activity.pauses),
            "longest_seconds": max(activity.pauses, default=0.0),
            "share": activity.summary()["pause_share"],
        },
        "words": word_prosody(
            [(word.text, word.start, word.end, len(word.phones)) for word in alignment.words],
            (analysis.pitch_times, analysis.pitch_hz),
            (analysis.intensity_times, analysis.intensity_db),
        ),
    }


WARM_UP_TEXT = "This is how a worker warms up."


def warm_up(*, models: bool = True) -> float:
    """Load what the audio stages otherwise load on a worker process's first sample; return the
    seconds it took.

    SciPy's signal and statistics modules, imported on first use (the web app never loads them),
    cost about 1.4 s of CPU, and the aligner and voice-activity models about 0.5 s more. Every
    fresh worker pays it at the same time, so it does not shrink as workers are added
    (bench/paper_scale.py). Without `models` only the imports are done, which is safe before a
    worker forks its pool."""
    started = time.monotonic()
    import scipy.signal
    import scipy.stats  # noqa: F401

    if models:
        speech = synthesize(WARM_UP_TEXT, rate_wpm=NEUTRAL_RATE_WPM, pitch=NEUTRAL_PITCH)
        reading_features(to_wav_bytes(speech.samples, speech.sample_rate), WARM_UP_TEXT)
    return time.monotonic() - started


def _voice_of(sample: BuildSample) -> str:
    source = sample.dialogue.voice if sample.dialogue is not None else sample.voice
    return str(source.get("voice") or "en-us")


def _earlier_turn(sample: BuildSample, voiced: dict[int, SpeakerPrompt]) -> SpeakerPrompt | None:
    """Return the turn before a dialogue turn as its speaker prompt: voiced in this unit, or stored
    by an earlier run (a unit may redo some turns only); None for turn 1 and single-turn samples."""
    if sample.turn < 2:
        return None
    if sample.turn - 1 in voiced:
        return voiced[sample.turn - 1]
    if sample.dialogue_id is None:
        return None
    stored = (
        BuildSample.objects.filter(dialogue_id=sample.dialogue_id, turn=sample.turn - 1)
        .exclude(user_audio_key="")
        .values_list("user_audio_key", "text")
        .first()
    )
    if stored is None:
        return None
    key, text = stored
    return SpeakerPrompt(read_media(key), text, sample.turn - 1, key)


def _prompt_of(sample: BuildSample) -> SpeakerPrompt | None:
    """Return the speaker prompt a turn was voiced with (its voice settings name it), for the
    neutral reading to use the same voice; None when it had none."""
    key = str(sample.voice.get("speaker_prompt_key") or "")
    if not key:
        return None
    turn = int(sample.voice.get("speaker_prompt_turn") or 0)
    earlier = (
        ""
        if sample.dialogue_id is None
        else (
            BuildSample.objects.filter(dialogue_id=sample.dialogue_id, turn=turn)
            .values_list("text", flat=True)
            .first()
            or ""
        )
    )
    return SpeakerPrompt(read_media(key), earlier, turn, key)


def user_audio(unit: Sequence[BuildSample], ctx: AudioStepContext) -> list[SampleResult]:
    """Voice each query; dialogue turns reuse the session's voice, and turns 2-5 are voiced with
    the previous turn's audio as the speaker prompt when the speech server takes one."""
    results = []
    voiced: dict[int, SpeakerPrompt] = {}
    for sample in unit:
        started = time.monotonic()
        try:
            wav, voice = _speak(
                sample.text,
                _voice_of(sample),
                sample.emotion,
                sample.intensity,
                ctx,
                sample.stressed_word,
                prompt=_earlier_turn(sample, voiced) if ctx.config.tts_speaker_prompt else None,
            )
        except (TtsError, ValueError, RuntimeError) as exc:
            results.append(
                SampleResult(sample.pk, False, TTS_ERROR, str(exc), seconds=time.monotonic() - started)
            )
            continue
        samples, rate = read_wav(wav)
        key = save_media(new_media_key("builder", "wav"), wav)
        if sample.turn:
            voiced[sample.turn] = SpeakerPrompt(wav, sample.text, sample.turn, key)
        fields = {"user_audio_key": key, "voice": voice, "audio_seconds": round(len(samples) / rate, 3)}
        results.append(SampleResult(sample.pk, True, fields=fields, seconds=time.monotonic() - started))
    return results


def consistency(unit: Sequence[BuildSample], ctx: AudioStepContext) -> list[SampleResult]:
    """Keep a turn only when its audio is heard as its target emotion, confidently, against the
    same voice reading the same words neutrally (voiced here, measured, kept as the baseline)."""
    results = []
    for sample in unit:
        started = time.monotonic()
        wav = read_media(sample.user_audio_key)
        try:
            neutral, _ = _speak(sample.text, _voice_of(sample), "", "", ctx, prompt=_prompt_of(sample))
        except (TtsError, ValueError, RuntimeError) as exc:
            detail = f"the neutral reading to compare with failed: {exc}"
            results.append(
                SampleResult(sample.pk, False, TTS_ERROR, detail, seconds=time.monotonic() - started)
            )
            continue
        features = reading_features(wav, sample.text)
        baseline = reading_features(neutral, sample.text)
        verdict = joint_verdict(
            [
                acoustic_verdict(features, baseline, sample.emotion, sample.intensity)
                if method == "acoustic"
                else ctx.classifiers[method].verdict(wav, sample.emotion)
                for method in ctx.config.consistency_methods()
            ]
        )
        stored = {**verdict.to_json(), "baseline": baseline}
        fields = {"features": features, "consistency": stored}
        if not verdict.consistent:
            reason, detail = (
                INCONSISTENT_EMOTION,
                f"expected {verdict.expected}, heard {verdict.predicted or 'nothing'}",
            )
        elif verdict.confidence < ctx.config.consistency_min_confidence:
            reason, detail = (
                NOT_CONFIDENT,
                f"confidence {verdict.confidence:.2f} below {ctx.config.consistency_min_confidence:.2f}",
            )
        else:
            reason, detail = "", ""
        results.append(
            SampleResult(
                sample.pk, not reason, reason, detail, fields=fields, seconds=time.monotonic() - started
            )
        )
    return results


def _speaker_similarities(unit: Sequence[BuildSample]) -> list[float | None]:
    """Return each dialogue turn's speaker similarity to the dialogue's other turns (None for a
    single-turn sample)."""
    if len(unit) < 2 or unit[0].dialogue_id is None:
        return [None] * len(unit)
    embeddings: list[Sequence[float] | None] = []
    for sample in unit:
        samples, rate = read_wav(read_media(sample.user_audio_key))
        embeddings.append(speaker_embedding(at_speech_rate(samples, rate)))
    return turn_similarities(embeddings)


def perception(unit: Sequence[BuildSample], ctx: AudioStepContext) -> list[SampleResult]:
    """Write the perception labels the two readings support, and what the speech models heard
    (`BuildSample.speech`: rate, pauses, stress against the asked emphasis, speaker consistency)."""
    results = []
    started = time.monotonic()
    similarities = _speaker_similarities(unit)
    # a dialogue's speaker embeddings are one cost for all its turns: shared out evenly
    shared = (time.monotonic() - started) / len(unit)
    for sample, similarity in zip(unit, similarities, strict=True):
        began = time.monotonic()
        baseline = sample.consistency.get("baseline") or {}
        stress = emphasis_agreement(
            str(sample.voice.get("emphasis") or ""),
            stressed_against_neutral(sample.features.get("words") or [], baseline.get("words") or []),
        )
        labels = perception_labels(
            sample.features,
            baseline,
            emotion=sample.emotion,
            emotion_variant=sample.emotion_variant,
            intensity=sample.intensity,
            situation=sample.topic_path.rsplit(" / ", 1)[-1],
            modality_conflict=sample.prompt_variant == MODALITY_CONFLICT,
            stressed_words=[stress["asked"]] if stress["asked"] and stress["agrees"] else [],
        )
        ratio = rate_ratio(sample.features, baseline)
        speech = {
            RATE_KEY: sample.features.get(RATE_KEY),
            "neutral_phones_per_second": baseline.get(RATE_KEY),
            "rate_ratio": round(ratio, 3) if ratio else None,
            "rate_level": labels["rate"],
            "pauses": sample.features.get("pauses") or {},
            "stress": stress,
            "speaker_similarity": similarity,
        }
        fields = {"perception": labels, "speech": speech}
        seconds = shared + time.monotonic() - began
        results.append(SampleResult(sample.pk, True, fields=fields, seconds=seconds))
    return results


def voice_response(text: str, style: str, ctx: AudioStepContext) -> bytes:
    """Return WAV bytes of a reply voiced in its speech style through the build's TTS backend.

    Raises TtsError, ValueError or RuntimeError when the backend cannot voice it."""
    config = ctx.config
    chosen = (
        TtsSettings(
            backend="openai",
            base_url=config.tts_base_url,
            api_key=ctx.api_key,
            model=config.tts_model,
            outbound=ctx.outbound,
        )
        if config.tts_backend == "openai"
        else None
    )
    samples, rate = speak_in_style(text, style, chosen)
    return to_wav_bytes(np.asarray(samples, dtype=np.int16), rate)


def response_audio(unit: Sequence[BuildSample], ctx: AudioStepContext) -> list[SampleResult]:
    """Voice each reply in the speech style its reasoning chose."""
    results = []
    for sample in unit:
        started = time.monotonic()
        try:
            wav = voice_response(sample.response, sample.speech_style, ctx)
        except (TtsError, ValueError, RuntimeError) as exc:
            results.append(
                SampleResult(sample.pk, False, TTS_ERROR, str(exc), seconds=time.monotonic() - started)
            )
            continue
        key = save_media(new_media_key("builder", "wav"), wav)
        results.append(
            SampleResult(
                sample.pk, True, fields={"response_audio_key": key}, seconds=time.monotonic() - started
            )
        )
    return results
