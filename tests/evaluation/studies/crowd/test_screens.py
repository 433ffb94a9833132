"""The screens' pure parts: Woods et al.'s antiphase tones, digits in noise, platform parameters."""

from __future__ import annotations

import io
import random
import wave

import numpy as np
import pytest

from evaluation.studies.crowd import digits, headphones
from evaluation.studies.crowd.platforms import Entry, EntryProblem, Platform, Preview, read_entry, return_url


def _no_token(token: str) -> str | None:
    return None


def test_each_headphone_trial_has_one_tone_of_each_kind_and_answers_the_quiet_one():
    trials = headphones.plan_trials(random.Random(3))
    assert len(trials) == 6
    for trial in trials:
        assert sorted(trial.tones) == ["antiphase", "quiet", "standard"]
        assert trial.tones[trial.answer - 1] == "quiet"


def test_the_quiet_tone_is_6_db_down_and_the_antiphase_tone_cancels_when_channels_are_summed():
    trial = headphones.HeadphoneTrial(("standard", "quiet", "antiphase"))
    audio = headphones.trial_samples(trial)
    tone = int(headphones.TONE_SECONDS * headphones.SAMPLE_RATE)
    gap = int(headphones.GAP_SECONDS * headphones.SAMPLE_RATE)
    parts = [audio[i * (tone + gap) : i * (tone + gap) + tone] for i in range(3)]
    rms = [float(np.sqrt(np.mean(part[:, 0] ** 2))) for part in parts]
    assert 20 * np.log10(rms[1] / rms[0]) == pytest.approx(-6.0, abs=0.01)
    assert rms[2] == pytest.approx(rms[0])  # over headphones each ear hears it at full level
    assert np.allclose(parts[2][:, 0], -parts[2][:, 1])
    assert np.max(np.abs(parts[2].sum(axis=1))) < 1e-9  # a loudspeaker pair's sum: nothing left
    with wave.open(io.BytesIO(headphones.trial_wav(trial))) as wav:
        assert (wav.getnchannels(), wav.getframerate()) == (2, headphones.SAMPLE_RATE)


def test_five_of_six_pass_the_headphone_screen_and_four_do_not():
    trials = headphones.plan_trials(random.Random(1))
    right = [trial.answer for trial in trials]
    one_wrong = [right[0] % 3 + 1, *right[1:]]
    two_wrong = [right[0] % 3 + 1, right[1] % 3 + 1, *right[2:]]
    assert headphones.passed(headphones.score(trials, one_wrong))
    assert not headphones.passed(headphones.score(trials, two_wrong))
    assert headphones.score(trials, [None] * 6) == 0


def test_digits_are_mixed_at_the_asked_snr():
    speech = np.sin(np.linspace(0, 400, 8000)) * 0.3
    noise = digits.speech_shaped_noise(speech, 12000, np.random.default_rng(0))
    mixed = digits.mix_at_snr(speech, noise, -3.0, 2000)
    added_noise = mixed[2000:10000] - speech
    snr = 20 * np.log10(np.sqrt(np.mean(speech**2)) / np.sqrt(np.mean(added_noise**2)))
    assert snr == pytest.approx(-3.0, abs=1e-6)
    assert np.abs(mixed[:2000]).max() > 0  # noise before the digits starts


def test_typed_triplets_are_scored_whole_ignoring_spaces_and_commas():
    triplets = [digits.Triplet((1, 2, 3), 6.0), digits.Triplet((4, 5, 6), 0.0)]
    assert digits.score(triplets, ["1 2 3", "4,6,5"]) == 1
    assert digits.typed_digits(" 7-8 9 ") == "789"


def test_a_digit_triplet_is_real_speech_in_noise():
    wav = digits.triplet_wav(digits.Triplet((3, 7, 1), 0.0), seed=4)
    with wave.open(io.BytesIO(wav)) as audio:
        assert audio.getnframes() / audio.getframerate() > 1.0


def test_platform_parameters_are_read_per_platform():
    assert read_entry(
        Platform.PROLIFIC, {"PROLIFIC_PID": "p", "STUDY_ID": "s", "SESSION_ID": "x"}, _no_token
    ) == Entry("p", "s", "x")
    mturk = {"workerId": "W", "hitId": "H", "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}
    assert read_entry(Platform.MTURK, mturk, _no_token) == Preview()
    assert read_entry(Platform.MTURK, {**mturk, "assignmentId": "A"}, _no_token) == Entry("W", "H", "A")
    with pytest.raises(EntryProblem, match="missing SESSION_ID"):
        read_entry(Platform.PROLIFIC, {"PROLIFIC_PID": "p", "STUDY_ID": "s"}, _no_token)
    with pytest.raises(EntryProblem, match="personal link"):
        read_entry(Platform.GENERIC, {"token": "forged"}, _no_token)


def test_return_links_default_to_prolifics_and_take_the_studys_own():
    assert (
        return_url(Platform.PROLIFIC, "", "AB12") == "https://app.prolific.com/submissions/complete?cc=AB12"
    )
    assert return_url(Platform.MTURK, "", "AB12") == ""
    assert (
        return_url(Platform.GENERIC, "https://lab.example/done?c={code}", "A&B")
        == "https://lab.example/done?c=A%26B"
    )
