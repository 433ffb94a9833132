"""Listening-study clips are heard at one loudness level, as P.808 asks, and kept at their own
level for admins; the systems' stored audio is never touched."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest
from django.urls import reverse

from annotation.audio.acoustics import integrated_loudness_lufs
from annotation.audio.speech.loudness import STUDY_LEVEL_LUFS, loudness
from annotation.audio.synthesis import synthesize, to_wav_bytes
from evaluation.outputs.models import ModelOutput
from evaluation.studies.models import StudyStimulus
from tests.evaluation.studies.support import build_world, make_study
from tests.factories import stored_wav
from webapp.storage import read_media

SENTENCE = "I am so sorry to hear about your day, that sounds really hard and I am here for you."


def _speech_at(gain: float) -> bytes:
    speech = synthesize(SENTENCE)
    return to_wav_bytes(np.round(speech.samples * gain).astype(np.int16), speech.sample_rate)


def _samples(data: bytes) -> tuple[np.ndarray, int]:
    with wave.open(io.BytesIO(data)) as reader:
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
        return pcm.astype(np.float64) / 32768, reader.getframerate()


def _lufs(data: bytes) -> float:
    samples, rate = _samples(data)
    measured = loudness(samples, rate).integrated_lufs
    assert measured is not None
    return measured


def test_clips_at_different_levels_come_out_at_the_study_level_and_the_originals_stay(
    media_root, users, make_user, client_for
) -> None:
    # given one system answering 30 dB quieter than the other
    world = build_world(make_user, n_systems=2, n_items=4)
    stored: dict[int, tuple[str, bytes]] = {}
    for output in world.outputs:
        data = _speech_at(0.03 if output.system == world.systems[0] else 0.95)
        stored[output.pk] = (stored_wav(data, "output"), data)
        ModelOutput.objects.filter(pk=output.pk).update(response_audio_key=stored[output.pk][0])
    levels = sorted({round(_lufs(data)) for _, data in stored.values()})
    assert levels[-1] - levels[0] >= 25

    # when a study of both is created
    study = make_study(world, [users["evaluator"]], users["admin"])

    # then every clip raters hear is within 0.5 LU of the study level, by this meter and the
    # project's own BS.1770 implementation, the trapping item's too
    heard = study.stimuli.exclude(audio_key="")
    assert {stimulus.kind for stimulus in heard} >= {StudyStimulus.Kind.RATED, StudyStimulus.Kind.TRAP}
    for stimulus in heard:
        data = read_media(stimulus.audio_key)
        samples, rate = _samples(data)
        assert abs(_lufs(data) - STUDY_LEVEL_LUFS) <= 0.5
        own_meter = integrated_loudness_lufs(samples, rate)
        assert own_meter is not None and abs(own_meter - STUDY_LEVEL_LUFS) <= 0.5
        assert np.max(np.abs(samples)) < 1.0  # levelled, never clipped
    # and each output's clip is kept at its own level, sample for sample, and the system's own
    # stored file is unchanged
    for stimulus in heard.exclude(output=None):
        assert stimulus.output_id is not None
        key, data = stored[stimulus.output_id]
        assert read_media(key) == data
        kept, _ = _samples(read_media(stimulus.original_audio_key))
        original, _ = _samples(data)
        assert np.array_equal(kept, original)
    # and only admins reach the clips at their own level
    page = client_for("admin").get(reverse("evaluation:study_clips", args=[study.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('data-testid="original"') == html.count('data-testid="heard"') == heard.count()
    assert client_for("evaluator").get(reverse("evaluation:study_clips", args=[study.pk])).status_code == 403


@pytest.mark.parametrize("gain", [0.01, 0.5])
def test_a_clip_is_levelled_but_never_pushed_past_minus_one_dbtp(gain: float) -> None:
    from annotation.audio.speech.loudness import normalised_wav

    levelled = normalised_wav(_speech_at(gain))
    samples, rate = _samples(levelled)
    assert abs(_lufs(levelled) - STUDY_LEVEL_LUFS) <= 0.5
    assert loudness(samples, rate).true_peak_dbtp <= -1.0 + 0.05
