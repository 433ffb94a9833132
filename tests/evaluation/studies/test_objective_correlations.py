"""Spearman's rho of the objective audio measures with human MOS in study results: by hand, with
n, and a note instead of a coefficient when n is too small."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from scipy import stats

from evaluation.outputs.audio_metrics import METRICS
from evaluation.outputs.models import OutputAudioMetrics
from evaluation.studies.models import StudyAssignment
from evaluation.studies.results import MIN_CORRELATION_PAIRS, objective_correlations
from evaluation.studies.screening import RatingRow
from tests.evaluation.studies.support import build_world, make_study, rate_everything


def _rows(mos: dict[str, list[int]], rater_prefix: str = "r", kind: str = "rated") -> list[RatingRow]:
    return [
        RatingRow(f"{rater_prefix}{n}", stimulus, kind, "A", stimulus, "naturalness", score)  # type: ignore[arg-type]
        for stimulus, scores in mos.items()
        for n, score in enumerate(scores)
    ]


MOS = {f"s{n}": [1 + n % 5, 1 + (n * 3) % 5] for n in range(12)}
P808 = {f"s{n}": {"p808_mos": 2.0 + 0.1 * ((n * 7) % 12), "loudness_lufs": None} for n in range(12)}


def test_rho_is_scipys_spearman_of_the_measure_with_each_outputs_mean_score() -> None:
    [p808, loudness] = objective_correlations(
        _rows(MOS), P808, ["naturalness"], ["p808_mos", "loudness_lufs"]
    )
    means = [sum(MOS[s]) / 2 for s in MOS]
    expected = stats.spearmanr([P808[s]["p808_mos"] for s in MOS], means)
    assert (p808.n, p808.rho, p808.p_value) == (
        12,
        pytest.approx(expected.statistic),
        pytest.approx(expected.pvalue),
    )
    assert (loudness.n, loudness.rho) == (0, None)
    assert "too few" in loudness.note


def test_a_perfectly_ordered_measure_has_rho_one_and_reversed_minus_one() -> None:
    mos = {f"s{n}": [1 + n // 3] for n in range(12)}
    rising = {f"s{n}": {"m": float(n)} for n in range(12)}
    falling = {f"s{n}": {"m": float(-n)} for n in range(12)}
    assert objective_correlations(_rows(mos), rising, ["naturalness"], ["m"])[0].rho == pytest.approx(
        1.0, abs=0.05
    )
    assert objective_correlations(_rows(mos), falling, ["naturalness"], ["m"])[0].rho == pytest.approx(
        -1.0, abs=0.05
    )


def test_too_few_outputs_or_a_constant_measure_give_a_note_not_a_rho() -> None:
    few = {f"s{n}": MOS[f"s{n}"] for n in range(MIN_CORRELATION_PAIRS - 1)}
    [small] = objective_correlations(_rows(few), P808, ["naturalness"], ["p808_mos"])
    assert (small.n, small.rho) == (MIN_CORRELATION_PAIRS - 1, None)
    assert (
        small.note
        == f"n = {MIN_CORRELATION_PAIRS - 1}: too few outputs with both for a correlation (at least 10)"
    )
    constant = {stimulus: {"p808_mos": 3.0} for stimulus in MOS}
    [flat] = objective_correlations(_rows(MOS), constant, ["naturalness"], ["p808_mos"])
    assert flat.rho is None and "same value" in flat.note


def test_excluded_raters_and_unrated_stimuli_count_for_nothing() -> None:
    # an excluded rater's contrary scores, and gold ratings, change nothing
    noise = _rows({stimulus: [6 - score for score in scores] for stimulus, scores in MOS.items()}, "x")
    gold = _rows(MOS, "g", kind="gold")
    plain = objective_correlations(_rows(MOS), P808, ["naturalness"], ["p808_mos"])
    with_others = objective_correlations(
        _rows(MOS) + noise + gold, P808, ["naturalness"], ["p808_mos"], excluded_raters={"x0", "x1"}
    )
    assert with_others == plain


def test_the_results_page_correlates_each_measure_with_each_audio_dimension(
    media_root, users, make_user, client_for
) -> None:
    # given a study of ten rated outputs whose measured P.808 the one rater's naturalness follows
    world = build_world(make_user, n_systems=2, n_items=6)
    for rank, output in enumerate(world.outputs):
        OutputAudioMetrics.objects.create(
            output=output, audio_key=output.response_audio_key, p808_mos=2.0 + 0.2 * rank
        )
    rater = users["evaluator"]
    study = make_study(
        world, [rater], users["admin"], items_per_system=5, dimensions=["naturalness", "prosody"]
    )
    p808_of = {
        metrics.output_id: float(metrics.p808_mos or 0.0) for metrics in OutputAudioMetrics.objects.all()
    }

    def score_for(assignment: StudyAssignment, dimension: str) -> int:
        output = assignment.stimulus.output
        if output is None:
            return 2  # the trapping item asks for 2
        return min(5, 1 + int((p808_of[output.pk] - 2.0) / 0.5)) if dimension == "naturalness" else 3

    rate_everything(study, rater, score_for)

    # when the admin reads the results
    html = client_for("admin").get(reverse("evaluation:study_results", args=[study.pk])).content.decode()

    # then P.808 correlates with naturalness over the ten rated outputs; prosody (all 3) has no rho,
    # nor loudness (not measured)
    table = re.search(r'data-testid="objective-correlations">(.*?)</table>', html, re.S)
    assert table is not None
    p808 = re.search(r'<tr data-metric="p808_mos">(.*?)</tr>', table.group(1), re.S)
    assert p808 is not None
    naturalness, prosody = re.findall(r"<td>(.*?)</td>", p808.group(1), re.S)
    assert "ρ = 0.9" in naturalness and "n = 10" in naturalness
    assert "same value" in prosody
    assert "n = 0: too few" in table.group(1)

    # and the results API carries the same figures, each measure with its scale
    objective = client_for("admin").get(f"/api/studies/{study.pk}/results/").json()["objective"]
    assert objective["min_pairs"] == MIN_CORRELATION_PAIRS
    assert [metric["key"] for metric in objective["metrics"]] == [metric.key for metric in METRICS]
    assert all(metric["scale"] for metric in objective["metrics"])

    def shown(correlation: dict) -> str:
        if correlation["rho"] is None:
            return correlation["note"]
        return f"ρ = {correlation['rho']:.2f} (n = {correlation['n']}, p = {correlation['p_value']:.3f})"

    for metric in METRICS:
        row = re.search(rf'<tr data-metric="{metric.key}">(.*?)</tr>', table.group(1), re.S)
        assert row is not None
        page_cells = [
            re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td>(.*?)</td>", row.group(1), re.S)
        ]
        api_cells = [shown(c) for c in objective["correlations"] if c["metric"] == metric.key]
        assert [c["dimension"] for c in objective["correlations"] if c["metric"] == metric.key] == [
            "naturalness",
            "prosody",
        ]
        assert api_cells == page_cells, metric.key
