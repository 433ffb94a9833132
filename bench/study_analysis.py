"""Time the analysis of 100,000 answers of each comparison test type (CCR, A/B, MUSHRA).

    python bench/study_analysis.py [--answers 100000] [--seed 1]

The rows are what `evaluation.studies.comparison_reports.analyse` receives from the database
(the same function the results page, the exports and the API call): CCR votes against a reference
of 6 systems, A/B votes over every pair of 6 systems (Bradley–Terry with 1,000 bootstrap
replicates resampling raters), and MUSHRA scores of 4 systems with a hidden reference and two
anchors (post-screening and box plots). 500 raters, 200 items, plus each rater's time on task.
Prints the seconds per test type (scipy already loaded, as in a running web process).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

# Run as a script from anywhere: make the repository importable, and Django configured (the
# analysis itself is pure, but it lives beside the models it reads).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
import django

django.setup()

from evaluation.studies.comparison_reports import analyse
from evaluation.studies.comparisons import HIDDEN_REFERENCE, LOW_ANCHOR, MID_ANCHOR, MushraScore, PairVote

SYSTEMS = [f"system-{n}" for n in range(6)]
RATERS = [f"rater-{n}" for n in range(500)]
ITEMS = [f"item-{n}" for n in range(200)]


def pair_votes(n: int, rng: random.Random, reference: str | None, scale: int) -> list[PairVote]:
    votes = []
    for _ in range(n):
        if reference is not None:
            first, second = reference, rng.choice(SYSTEMS[1:])
        else:
            first, second = rng.sample(SYSTEMS, 2)
        if rng.random() < 0.5:
            first, second = second, first
        advantage = SYSTEMS.index(second) - SYSTEMS.index(first)
        answer = max(-scale, min(scale, round(advantage / 3 + rng.gauss(0, 1))))
        votes.append(PairVote(rng.choice(RATERS), rng.choice(ITEMS), first, second, answer))
    return votes


def mushra_scores(n: int, rng: random.Random) -> list[MushraScore]:
    conditions = {HIDDEN_REFERENCE: 95, **{system: 50 + 8 * i for i, system in enumerate(SYSTEMS[1:5])}}
    conditions.update({MID_ANCHOR: 45, LOW_ANCHOR: 15})
    rows: list[MushraScore] = []
    trial = 0
    while len(rows) < n:
        rater, item = rng.choice(RATERS), rng.choice(ITEMS)
        for condition, centre in conditions.items():
            if condition == HIDDEN_REFERENCE:  # mostly found, sometimes missed (post-screening has work)
                score = 100 if rng.random() < 0.93 else round(rng.uniform(60, 95))
            else:
                score = max(0, min(100, round(rng.gauss(centre, 12))))
            rows.append(MushraScore(rater, f"t{trial}", item, condition, score))
        trial += 1
    return rows[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    times = [(rng.choice(RATERS), rng.uniform(5, 60)) for _ in range(args.answers)]
    cases: dict[str, dict[str, Any]] = {
        "ccr": {"votes": pair_votes(args.answers, rng, SYSTEMS[0], 3), "reference": SYSTEMS[0]},
        "ab": {"votes": pair_votes(args.answers, rng, None, 1), "reference": None},
        "mushra": {"scores": mushra_scores(args.answers, rng), "reference": SYSTEMS[0]},
    }
    from scipy import stats  # noqa: F401  loaded once by the web process; not the analysis's time

    print(f"{args.answers:,} answers per test type, {len(RATERS)} raters, {len(ITEMS)} items")
    for kind, rows in cases.items():
        start = time.perf_counter()
        figures = analyse(
            kind,
            SYSTEMS if kind != "mushra" else SYSTEMS[:5],
            rows["reference"],
            votes=rows.get("votes", ()),
            scores=rows.get("scores", ()),
            times=times,
            anchors=["low", "mid"],
            seed=args.seed,
        )
        seconds = time.perf_counter() - start
        print(
            f"{kind:>6}: {seconds:6.2f} s  ({figures.n_answers:,} answers kept, {len(figures.excluded)} raters excluded)"
        )


if __name__ == "__main__":
    main()
