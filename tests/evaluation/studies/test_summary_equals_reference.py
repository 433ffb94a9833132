"""The vectorised ACR summary gives the figures of the plain computations it replaced (issue 44).

`summarise_ratings` now groups the rows once and `bootstrap_mos_ci` draws its replicates once per
(raters, items, seed) and totals them with a matrix product. On generated data, every figure
equals a direct computation: the t interval over per-output means (scipy), the percentile
bootstrap with the three-way einsum of the previous implementation, Wilcoxon with Holm (scipy),
and ordinal Krippendorff's alpha (the krippendorff package).
"""

from __future__ import annotations

import random
from collections import defaultdict
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from scipy import stats

from evaluation.studies.results import summarise_ratings
from evaluation.studies.screening import RatingRow
from webapp.lib.ratings import bootstrap_mos_ci, holm_correction

SYSTEMS = ["A", "B", "C"]
DIMENSIONS = ["naturalness", "prosody"]
N_BOOT = 300


def generated_rows(seed: int = 7) -> list[RatingRow]:
    """30 raters, each rating a random half of 40 items of every system (leniency and quality vary)."""
    rng = random.Random(seed)
    rows = []
    for r in range(30):
        lenient = rng.choice([-1, 0, 0, 1])
        for item in rng.sample(range(40), 20):
            for s, system in enumerate(SYSTEMS):
                for dimension in DIMENSIONS:
                    score = min(5, max(1, round(2.5 + s * 0.6 + lenient + rng.gauss(0, 1))))
                    rows.append(
                        RatingRow(f"r{r}", f"{system}-{item}", "rated", system, f"i{item}", dimension, score)
                    )
    rows += [RatingRow("r0", "gold-1", "gold", "A", "g1", "naturalness", 5)]  # counts for nothing here
    return rows


def einsum_bootstrap(table: list[tuple[str, str, float]], n_boot: int, seed: int) -> tuple[float, float]:
    """The previous implementation of `bootstrap_mos_ci`'s interval, kept literally as the reference."""
    raters = sorted({rater for rater, _, _ in table}, key=str)
    items = sorted({item for _, item, _ in table}, key=str)
    sums = np.zeros((len(raters), len(items)))
    counts = np.zeros((len(raters), len(items)))
    for rater, item, score in table:
        sums[raters.index(rater), items.index(item)] += score
        counts[raters.index(rater), items.index(item)] += 1
    rng = np.random.default_rng(seed)
    rater_weights = rng.multinomial(len(raters), np.full(len(raters), 1.0 / len(raters)), size=n_boot)
    item_weights = rng.multinomial(len(items), np.full(len(items), 1.0 / len(items)), size=n_boot)
    numerators = np.einsum("br,ri,bi->b", rater_weights, sums, item_weights)
    denominators = np.einsum("br,ri,bi->b", rater_weights, counts, item_weights)
    replicates = numerators[denominators > 0] / denominators[denominators > 0]
    tail = (1.0 - 0.95) / 2.0 * 100.0  # as the function writes it (2.5000000000000022)
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return float(low), float(high)


def test_the_bootstrap_equals_the_einsum_form_on_generated_data() -> None:
    rng = random.Random(3)
    table = [(f"r{rng.randrange(25)}", f"i{rng.randrange(60)}", float(rng.randint(1, 5))) for _ in range(900)]
    for seed in (0, 1, 5):
        interval = bootstrap_mos_ci(table, n_boot=N_BOOT, seed=seed)
        assert (interval.low, interval.high) == einsum_bootstrap(table, N_BOOT, seed)
        assert interval.mean == pytest.approx(sum(score for _, _, score in table) / len(table))


def test_the_summary_equals_direct_computations_on_generated_data() -> None:
    rows = generated_rows()
    summary = summarise_ratings(rows, SYSTEMS, DIMENSIONS, excluded_raters={"r3"}, n_boot=N_BOOT, seed=2)
    kept = [row for row in rows if row.kind == "rated" and row.rater != "r3"]
    assert summary.n_ratings == len(kept)
    assert summary.raters_excluded == ("r3",)
    for dimension in DIMENSIONS:
        per_item: dict[str, dict[str, float]] = {}
        for system in SYSTEMS:
            own = [row for row in kept if row.system == system and row.dimension == dimension]
            by_output: dict[str, list[float]] = defaultdict(list)
            for row in own:
                by_output[row.stimulus].append(row.score)
            means = np.array([np.mean(scores) for scores in by_output.values()])
            low, high = stats.t.interval(0.95, len(means) - 1, loc=means.mean(), scale=stats.sem(means))
            cell = summary.cell(system, dimension)
            assert (cell.n_outputs, cell.n_ratings) == (len(by_output), len(own))
            assert cell.mean == pytest.approx(means.mean(), abs=1e-12)
            assert (cell.low, cell.high) == pytest.approx((low, high), abs=1e-12)
            table = [(row.rater, row.stimulus, float(row.score)) for row in own]
            assert (cell.bootstrap_low, cell.bootstrap_high) == einsum_bootstrap(table, N_BOOT, 2)
            by_item: dict[str, list[int]] = defaultdict(list)
            for row in own:
                by_item[row.item].append(row.score)
            per_item[system] = {item: float(np.mean(scores)) for item, scores in by_item.items()}
        pairs = list(combinations(SYSTEMS, 2))
        pvalues = []
        for a, b in pairs:
            shared = [item for item in per_item[a] if item in per_item[b]]
            pvalues.append(
                stats.wilcoxon([per_item[a][i] for i in shared], [per_item[b][i] for i in shared]).pvalue
            )
        tests = [comparison.test for comparison in summary.comparisons if comparison.dimension == dimension]
        assert [(test.system_a, test.system_b) for test in tests] == pairs
        assert [test.p_value for test in tests] == pytest.approx(pvalues, abs=1e-12)
        assert [test.p_holm for test in tests] == pytest.approx(holm_correction(pvalues), abs=1e-12)

        on_dimension = [row for row in kept if row.dimension == dimension]
        raters = sorted({row.rater for row in on_dimension})
        stimuli = sorted({row.stimulus for row in on_dimension})
        reliability = np.full((len(raters), len(stimuli)), np.nan)
        for row in on_dimension:
            reliability[raters.index(row.rater), stimuli.index(row.stimulus)] = row.score
        agreement = next(found for found in summary.agreement if found.dimension == dimension)
        assert agreement.n_ratings == len(on_dimension)
        assert agreement.alpha == pytest.approx(
            krippendorff.alpha(reliability_data=reliability, level_of_measurement="ordinal"), abs=1e-9
        )
