"""Dashboard numbers (pure): Fleiss' kappa of verdicts by hand, acceptance rates."""

from __future__ import annotations

import pytest

from annotation.recording.reports import acceptance_rate, verdict_agreement


def test_kappa_of_verdicts_matches_the_hand_computation() -> None:
    # Four takes, three verdicts each: AAA, AAR, RRR, AAA.
    # P_i: 1, 1/3, 1, 1 -> mean 5/6. Shares: accept 8/12, reject 4/12 -> chance 4/9 + 1/9 = 5/9.
    # kappa = (5/6 - 5/9) / (1 - 5/9) = (5/18) / (4/9) = 5/8.
    verdicts = [["accept"] * 3, ["accept", "accept", "reject"], ["reject"] * 3, ["accept"] * 3]
    agreement = verdict_agreement(verdicts, 3)
    assert agreement.kappa == pytest.approx(5 / 8)
    assert agreement.takes == 4
    assert agreement.unanimous_share == pytest.approx(3 / 4)


def test_takes_without_all_verdicts_are_left_out_and_kappa_can_be_undefined() -> None:
    assert verdict_agreement([["accept", "accept"]], 3).takes == 0
    unanimous = verdict_agreement([["accept"] * 3, ["accept"] * 3, ["accept", "pending", "accept"]], 3)
    assert (unanimous.takes, unanimous.kappa, unanimous.unanimous_share) == (2, None, 1.0)
    assert "Every verdict is the same" in unanimous.note


def test_acceptance_rate_counts_decided_takes_only() -> None:
    assert acceptance_rate(3, 1) == 0.75
    assert acceptance_rate(0, 0) is None
