"""The README's and docs' learning figures are the numbers the benches saved (bench/results/), and
the defaults they name are the code's (issue 42: claims worded to what they show)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.claims import family_table, interval_text, load, percent
from ml.core.config import DEFAULT_AAA_TARGET_RATIO, SdcaConfig, SftConfig

ROOT = Path(__file__).resolve().parents[2]


def flat(path: Path) -> str:
    """Return a page with every run of whitespace as one space (a figure may wrap a line)."""
    return " ".join(path.read_text().split())


README = flat(ROOT / "README.md")
BENCHMARKS_PAGE = (ROOT / "docs" / "benchmarks.md").read_text()
BENCHMARKS = flat(ROOT / "docs" / "benchmarks.md")
TRAINING = flat(ROOT / "docs" / "training.md")
AAA = "aaa_lambda0.03_ratio2"
FRESH = load("conflict_sft_fresh")
SELECTION = load("conflict_sft_selection")
RATIOS = load("conflict_sft_target_ratios")
RL = load("conflict_rl")


def target_ratio_text() -> str:
    """The one-seed target-ratio run as README and docs/benchmarks.md word it."""
    arms = [arm for arm in RATIOS["rho_rise"] if arm != "plain"]

    def listed(items: list[str]) -> str:
        return ", ".join(items[:-1]) + " and " + items[-1]

    rises = listed([percent(RATIOS["rho_rise"][arm]["mean"]) for arm in arms])
    ratios = listed([arm.rsplit("ratio", 1)[1] for arm in arms])
    contrasts = listed([percent(RATIOS["rho_after_over_plain"][arm]["mean"]) for arm in arms])
    plain = percent(RATIOS["rho_rise"]["plain"]["mean"])
    return (
        f"AAA raises rho over its start by {rises} at target ratios {ratios} (plain SFT {plain}), "
        f"which is {contrasts} above plain SFT"
    )


def test_the_headline_rho_figure_is_aaa_against_plain_sft_on_fresh_seeds() -> None:
    headline = percent(FRESH["rho_after_over_plain"][AAA]["mean"])
    assert f"rho **{headline}** above plain SFT's" in README
    assert f"is **{headline}** above rho after plain SFT" in BENCHMARKS
    assert (
        f"rho rose {percent(FRESH['rho_rise'][AAA]['mean'])} [{percent(FRESH['rho_rise'][AAA]['low'])}, "
        in BENCHMARKS
    )
    # the selection seeds are reported apart, with the same contrast
    for lambda_aaa in ("0.03", "0.1", "0.3"):
        contrast = SELECTION["rho_after_over_plain"][f"aaa_lambda{lambda_aaa}_ratio2"]["mean"]
        assert f"λ {lambda_aaa} {percent(contrast)}" in BENCHMARKS


def test_the_target_ratio_dependence_is_the_saved_run() -> None:
    assert target_ratio_text() in README
    assert target_ratio_text() in BENCHMARKS
    assert f"(default {DEFAULT_AAA_TARGET_RATIO:g})" in README


def test_listening_figures_are_the_fresh_seeds_and_the_pool_is_kept_apart() -> None:
    fresh = FRESH["minus_plain"][AAA]
    assert f"{interval_text(fresh['listening'])} more than plain SFT" in README
    assert f"greedy accuracy at the end where it was ({interval_text(fresh['accuracy'])})" in README
    assert f"listening over the run **{interval_text(fresh['listening'])}**" in BENCHMARKS
    pooled = interval_text(FRESH["pooled_with_selection_seeds"]["listening"])
    assert pooled not in README  # the pool includes the seeds lambda was chosen on
    assert f"gives listening {pooled}, but half" in BENCHMARKS


def test_rl_arms_are_a_stated_family_with_holm_adjusted_figures() -> None:
    family = RL["family"]
    assert len(family) == 12
    assert family_table(family) in BENCHMARKS_PAGE
    headline = family["sdca - grpo: reason|perception"]
    assert (
        f"reason|perception is {interval_text(headline)} uncorrected, Holm-adjusted p {headline['p_holm']:.2f}"
        in README
    )
    smallest = min(family.values(), key=lambda figures: figures["p_holm"])
    assert f"the smallest Holm-adjusted p-value is {smallest['p_holm']:.2f}" in BENCHMARKS
    # "separate no pair of arms" is what the saved family says
    assert not any(figures["claimed"] for figures in family.values())


def test_bench_figures_are_not_named_as_table_8s() -> None:
    conflict = BENCHMARKS[BENCHMARKS.index("### Conflict-task mini-replication") :]
    for page in (README, conflict):
        assert "P(S|R)" not in page and "Err " not in page and "error ratio" not in page
        assert "against the paper" not in page


@pytest.mark.parametrize("page", [README, BENCHMARKS, TRAINING], ids=["README", "benchmarks", "training"])
def test_every_default_lambda_named_is_the_codes(page: str) -> None:
    named = re.findall(r"default(?:s to)? λ (\d+(?:\.\d+)?)|λ (\d+(?:\.\d+)?),? the default\b", page)
    for value in (a or b for a, b in named):
        assert float(value) == SftConfig().lambda_aaa, f"a page calls λ {value} the default"
    taus = re.findall(r"default τ (\d+(?:\.\d+)?)|SDCA \(τ (\d+(?:\.\d+)?)\)", page)
    for value in (a or b for a, b in taus):
        assert float(value) == SdcaConfig().tau


def test_every_setting_default_the_deployment_page_names_is_the_settings() -> None:
    page = (ROOT / "docs" / "deployment.md").read_text()
    settings = (ROOT / "webapp" / "settings.py").read_text()
    checked = 0
    for name, value in re.findall(r"`(ECHOSTUDIO_[A-Z_]+)` \((\d+(?:\.\d+)?)\)", page):
        found = re.search(rf'env_(?:int|float)\(\s*"{name}",\s*([\d_.]+)\s*[,)]', settings)
        if found is None:
            continue  # a default computed from another setting (the reaper's half the stale time)
        checked += 1
        assert float(found.group(1).replace("_", "")) == float(value), f"{name}: docs say {value}"
    assert checked >= 10
