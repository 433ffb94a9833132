"""Counterbalancing: pairs heard in both orders, balanced per trial and per rater; MUSHRA anchors."""

from __future__ import annotations

import io
import random
import wave
from collections import Counter
from itertools import pairwise

import numpy as np
import pytest

from evaluation.studies.anchors import LOW_ANCHOR_HZ, MID_ANCHOR_HZ, anchor_wav
from evaluation.studies.design import Stimulus, StudyDesignError, distribute_ratings, plan_study
from evaluation.studies.trials import balanced_orders, pair_trials, shuffled


@pytest.mark.parametrize(
    ("n_trials", "n_raters", "per_trial", "seed"), [(12, 4, 2, 1), (30, 7, 3, 2), (9, 5, 5, 3), (40, 9, 4, 4)]
)
def test_pair_orders_are_balanced_per_trial_and_per_rater(n_trials, n_raters, per_trial, seed):
    trials = [f"t{n}" for n in range(n_trials)]
    raters = [f"r{n}" for n in range(n_raters)]
    shares = distribute_ratings(trials, raters, per_trial, random.Random(seed))
    flipped = balanced_orders(shares)
    assert set(flipped) == {(rater, trial) for rater, own in shares.items() for trial in own}
    per_trial_counts: dict[str, Counter] = {trial: Counter() for trial in trials}
    for (_rater, trial), flip in flipped.items():
        per_trial_counts[trial][flip] += 1
    for counts in per_trial_counts.values():
        assert abs(counts[True] - counts[False]) <= 1
        assert counts[True] >= 1 and counts[False] >= 1  # both orders across raters
    for rater, own in shares.items():
        flips = sum(flipped[(rater, trial)] for trial in own)
        assert abs(2 * flips - len(own)) <= 1, rater


def test_pairs_are_against_the_reference_or_every_pair():
    assert pair_trials(["R", "A", "B"], reference="R") == [("R", "A"), ("R", "B")]
    assert pair_trials(["A", "B", "C"]) == [("A", "B"), ("A", "C"), ("B", "C")]
    with pytest.raises(StudyDesignError):
        pair_trials(["A"])
    with pytest.raises(StudyDesignError):
        pair_trials(["A", "B"], reference="Z")


def test_pair_trials_of_one_item_are_never_back_to_back():
    trials = [
        Stimulus(f"{item}:{a}{b}", item, "rated")
        for item in "pqrstu"
        for a, b in pair_trials(["A", "B", "C"])
    ]
    plan = plan_study(trials, ["x", "y", "z"], ratings_per_output=2, seed=4)
    for order in plan.values():
        assert all(one.item != two.item for one, two in pairwise(order))


def test_mushra_positions_are_shuffled_per_rater():
    conditions = ["A", "B", "hidden", "low", "mid"]
    rng = random.Random(0)
    first = Counter(shuffled(conditions, rng)[0] for _ in range(2000))
    assert set(first) == set(conditions) and min(first.values()) > 300


def _tones(rate: int = 16000, seconds: float = 0.5) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    signal = 0.2 * (
        np.sin(2 * np.pi * 1000 * t) + np.sin(2 * np.pi * 5000 * t) + np.sin(2 * np.pi * 7600 * t)
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes((signal * 32767).astype("<i2").tobytes())
    return out.getvalue()


def _band_levels(data: bytes) -> dict[int, float]:
    with wave.open(io.BytesIO(data)) as reader:
        rate = reader.getframerate()
        samples = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2").astype(float)
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    freqs = np.fft.rfftfreq(len(samples), 1 / rate)
    return {hz: float(spectrum[np.argmin(np.abs(freqs - hz))]) for hz in (1000, 5000, 7600)}


def test_anchors_are_low_passed_copies_of_the_reference():
    reference = _tones()
    original = _band_levels(reference)
    low = _band_levels(anchor_wav(reference, LOW_ANCHOR_HZ))
    mid = _band_levels(anchor_wav(reference, MID_ANCHOR_HZ))
    db = lambda after, before: 20 * np.log10(after / before)  # noqa: E731
    assert abs(db(low[1000], original[1000])) < 0.5  # the pass band is kept
    assert db(low[5000], original[5000]) < -40 and db(low[7600], original[7600]) < -60
    assert abs(db(mid[5000], original[5000])) < 0.5 and db(mid[7600], original[7600]) < -20
    with pytest.raises(ValueError, match="sampled above 14 kHz"):
        anchor_wav(_tones(rate=8000), MID_ANCHOR_HZ)
