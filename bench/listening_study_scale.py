"""Time planning a listening study and computing its figures, at the paper's size and larger.

    python bench/listening_study_scale.py [--seed 1]

For each (systems, items, evaluators) size, with 3 ratings per output and the four dimensions:
the assignment plan (balanced, per-evaluator order with no item twice in a row), the rater
screening, and the summary (t and bootstrap intervals, Holm-corrected Wilcoxon tests, ordinal
alpha) over random scores. The paper's study is 6 systems x 20 items with 3 raters.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

# Run as a script from anywhere: make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.studies.design import DIMENSIONS, Stimulus, plan_study
from evaluation.studies.results import summarise_ratings
from evaluation.studies.screening import RatingRow, screen_study_raters

SIZES = ((6, 20, 3), (6, 20, 10), (13, 100, 10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    dimensions = list(DIMENSIONS)
    for systems, items, evaluators in SIZES:
        rated = [Stimulus(f"s{s}-i{i}", f"i{i}", "rated") for s in range(systems) for i in range(items)]
        start = time.perf_counter()
        plan = plan_study(rated, [f"e{n}" for n in range(evaluators)], 3, seed=args.seed)
        planned = time.perf_counter()
        rng = random.Random(args.seed)
        rows = [
            RatingRow(
                rater,
                stimulus.key,
                "rated",
                stimulus.key.split("-")[0],
                stimulus.item,
                dimension,
                rng.randint(1, 5),
            )
            for rater, order in plan.items()
            for stimulus in order
            for dimension in dimensions
        ]
        screen_study_raters(rows, {})
        screened = time.perf_counter()
        summarise_ratings(rows, [f"s{s}" for s in range(systems)], dimensions)
        summarised = time.perf_counter()
        print(
            f"systems={systems} items={items} evaluators={evaluators} ratings={len(rows)} "
            f"plan_s={planned - start:.3f} screening_s={screened - planned:.2f} summary_s={summarised - screened:.2f}"
        )


if __name__ == "__main__":
    main()
