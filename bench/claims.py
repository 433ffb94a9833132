"""The figures the conflict benches claim, as saved JSON (bench/results/), with their family's correction.

Each bench (bench/conflict_sft.py, bench/conflict_rl.py) saves what it printed: per-seed values
where the run kept them, and every paired difference as {mean, low, high, seeds} (a 95% t
interval over seeds). README.md and docs/benchmarks.md quote these files, and
tests/docs/test_claimed_figures.py holds them to it.

Arm-versus-arm intervals come as a family (`family_adjusted`): each difference's two-sided t-test
p-value, Holm's adjusted p-value over the family, and the Bonferroni interval at the family's 95%
(every interval in it holds at once with 95% confidence). A difference is claimed only when its
Holm-adjusted p-value is below 0.05. Figures transcribed from a run that kept no per-seed values
are rebuilt from the printed mean and interval (the t interval gives the standard error back).

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scipy import stats

from webapp.lib.ratings import holm_correction

RESULTS_DIR = Path(__file__).resolve().parent / "results"
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A paired difference over seeds: its mean and 95% t interval."""

    mean: float
    low: float
    high: float
    seeds: int

    @property
    def standard_error(self) -> float:
        return (self.high - self.low) / 2 / float(stats.t.ppf(0.5 + LEVEL / 2, self.seeds - 1))

    @property
    def p_value(self) -> float:
        """Two-sided t-test of a zero mean difference (seeds - 1 df)."""
        if self.standard_error == 0:
            return 0.0 if self.mean else 1.0
        return float(2 * stats.t.sf(abs(self.mean / self.standard_error), self.seeds - 1))

    @classmethod
    def of(cls, differences: Sequence[float]) -> Interval:
        """Return the mean and 95% t interval of paired differences."""
        n = len(differences)
        mean = statistics.fmean(differences)
        if n < 2:
            raise ValueError("an interval needs at least two seeds")
        half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * statistics.stdev(differences) / n**0.5
        return cls(round(mean, 4), round(mean - half, 4), round(mean + half, 4), n)

    @classmethod
    def read(cls, saved: Mapping[str, Any]) -> Interval:
        return cls(float(saved["mean"]), float(saved["low"]), float(saved["high"]), int(saved["seeds"]))


def family_adjusted(family: Mapping[str, Interval]) -> dict[str, dict[str, float | bool]]:
    """Return, per difference of the family: p, Holm's adjusted p, the Bonferroni interval at the
    family's 95%, and whether it is claimed (Holm-adjusted p below 0.05)."""
    names = list(family)
    adjusted = holm_correction([family[name].p_value for name in names])
    size = len(names)
    result: dict[str, dict[str, float | bool]] = {}
    for name, p_holm in zip(names, adjusted, strict=True):
        interval = family[name]
        half = float(stats.t.ppf(1 - (1 - LEVEL) / (2 * size), interval.seeds - 1)) * interval.standard_error
        result[name] = {
            "p": round(interval.p_value, 4),
            "p_holm": round(p_holm, 4),
            "family_low": round(interval.mean - half, 3),
            "family_high": round(interval.mean + half, 3),
            "claimed": p_holm < 1 - LEVEL,
        }
    return result


def signed(value: float, digits: int = 3) -> str:
    """Return `value` as the docs print it: with its sign, a true minus, `digits` decimals."""
    text = f"{value:+.{digits}f}"
    return text.replace("-", "\u2212")


def interval_text(saved: Mapping[str, Any], digits: int = 3) -> str:
    """Return "+0.035 [+0.003, +0.068]" from a saved interval."""
    return (
        f"{signed(saved['mean'], digits)} [{signed(saved['low'], digits)}, {signed(saved['high'], digits)}]"
    )


def percent(value: float) -> str:
    """Return a rise as the docs print it: "+91%"."""
    return signed(100 * value, 0) + "%"


def family_table(family: Mapping[str, Mapping[str, Any]]) -> str:
    """Return the Markdown table of a saved family: contrast, figure, interval, Holm p, family interval."""
    rows = [
        "| contrast | figure | mean [95% t interval] | Holm-adjusted p | family 95% interval |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, figures in family.items():
        contrast, figure = name.split(": ", 1)
        rows.append(
            f"| {contrast.replace(' - ', ' − ')} | {figure.replace('|', chr(92) + '|')} | {interval_text(figures)} "
            f"| {figures['p_holm']:.2f} | [{signed(figures['family_low'])}, {signed(figures['family_high'])}] |"
        )
    return "\n".join(rows)


RL_ARMS = {
    "start": "start (plain SFT)",
    "grpo": "GRPO",
    "sdca": "SDCA (τ 0.6)",
    "no-gating": "SDCA, no gating (τ 0)",
}


def rl_means_table(means: Mapping[str, Mapping[str, float]]) -> str:
    """Return the Markdown table of the RL bench's means over seeds: one row per arm."""
    figures = list(means["start"])
    rows = [
        "| | "
        + " | ".join(
            name.replace("|", chr(92) + "|")
            .replace("P right S wrong", "P right, S wrong")
            .replace("P wrong S right", "P wrong, S right")
            for name in figures
        )
        + " |",
        "| --- |" + " --- |" * len(figures),
    ]
    for arm, label in RL_ARMS.items():
        rows.append(f"| {label} | " + " | ".join(f"{means[arm][name]:.3f}" for name in figures) + " |")
    return "\n".join(rows)


def setting_text(setting: Mapping[str, Any]) -> str:
    """Return what a saved run ran on, as the docs word it."""
    load = " / ".join(f"{value:.1f}" for value in setting["load_average_at_end"])
    device = "the CPU" if setting["device"] == "cpu" else setting["device"]
    priority = (
        "a lowered priority (nice)"
        if "nice" not in setting
        else "normal priority (nice 0)"
        if setting["nice"] == 0
        else f"nice {setting['nice']}"
    )
    return (
        f"{setting['wall_s']} s wall, {setting['cpu_s']} s CPU, {setting['processes']} one-thread processes "
        f"on {device} ({setting['cores']} cores, torch {setting['torch']}), at {priority} "
        f"beside other work (load average {load} at the end, {setting['finished_utc']} UTC)"
    )


def sft_arm_label(arm: str) -> str:
    """Return "plain SFT" or "AAA λ 0.03" for a saved SFT arm ("plain", "aaa_lambda0.03_ratio2")."""
    return "plain SFT" if arm == "plain" else "AAA λ " + sft_lambda(arm)


def sft_lambda(arm: str) -> str:
    """Return the λ of a saved AAA arm as the docs print it: "0.03" for "aaa_lambda0.03_ratio2"."""
    return arm.removeprefix("aaa_lambda").split("_ratio", 1)[0]


def sft_means_table(figures: Mapping[str, Any]) -> str:
    """Return the Markdown table of the SFT bench's means over seeds: one row per arm."""
    means = figures["means"]
    rows = [
        f"| | listening (curve mean) | listening at step {figures['steps']} | greedy accuracy "
        f"| names the words' emotion | rho after (before {means['plain']['rho_before']:.3f}) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for arm, values in means.items():
        rows.append(
            f"| {sft_arm_label(arm)} | "
            + " | ".join(
                f"{values[name]:.3f}"
                for name in ("listening", "listening_end", "accuracy", "follows_words", "rho_after")
            )
            + " |"
        )
    return "\n".join(rows)


def sft_minus_plain_text(figures: Mapping[str, Any], arm: str) -> str:
    """Return "λ 0.03 − plain: listening ...; at step 150 ...; greedy accuracy ...; naming the words'
    emotion ..." from a saved SFT run's paired differences."""
    gains = figures["minus_plain"][arm]
    return (
        f"λ {sft_lambda(arm)} − plain: listening {interval_text(gains['listening'])}; at step "
        f"{figures['steps']} {interval_text(gains['listening_end'])}; greedy accuracy "
        f"{interval_text(gains['accuracy'])}; naming the words' emotion {interval_text(gains['follows_words'])}"
    )


def percent_interval(saved: Mapping[str, Any]) -> str:
    """Return "+93% [+80%, +106%]" from a saved interval of a ratio minus 1."""
    return f"{percent(saved['mean'])} [{percent(saved['low'])}, {percent(saved['high'])}]"


def interval_json(interval: Interval) -> dict[str, float | int]:
    return asdict(interval)


def run_setting(started_wall: float, cpu: float, jobs: int) -> dict[str, Any]:
    """Return what a saved run ran on: device, processes, wall and CPU seconds, load average, date."""
    import datetime
    import os
    import platform

    import torch

    return {
        "device": "cpu",
        "cpu_model": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "processes": jobs,
        "torch_threads_per_process": 1,
        "nice": os.nice(0),
        "torch": torch.__version__,
        "wall_s": round(started_wall),
        "cpu_s": round(cpu),
        "load_average_at_end": [round(load, 1) for load in os.getloadavg()],
        "finished_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
    }


def save(name: str, figures: Mapping[str, Any]) -> Path:
    """Write a bench's figures to bench/results/<name>.json and return the path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    return path


def load(name: str) -> dict[str, Any]:
    """Return the saved figures of bench/results/<name>.json."""
    loaded: dict[str, Any] = json.loads((RESULTS_DIR / f"{name}.json").read_text())
    return loaded
