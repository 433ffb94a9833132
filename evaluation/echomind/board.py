"""The EchoMind leaderboard over plain records (pure): per system, understanding and reasoning
accuracy (with intervals and unparsed counts), transcription WER, C1-C4, VES, text overlap and
audio quality; a metric nobody computed reads "not computed", never zero. CSV and LaTeX."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evaluation.echomind.scoring import REASONING, UNDERSTANDING, Accuracy, AnswerRecord, accuracy, corpus_wer

NOT_COMPUTED = "not computed"
# Reply metrics in column order: key, heading.
REPLY_METRICS = (
    ("c1", "C1 context fit"),
    ("c2", "C2 naturalness"),
    ("c3", "C3 colloquialism"),
    ("c4", "C4 speech info"),
    ("ves", "VES"),
    ("bleu4", "BLEU-4"),
    ("rouge_l", "ROUGE-L"),
    ("bertscore", "BERTScore"),
    ("emotion_alignment", "Emotion alignment"),
    ("dnsmos", "DNSMOS"),
    ("nisqa", "NISQA"),
)


@dataclass(frozen=True)
class BoardRow:
    system: str
    understanding: Accuracy
    reasoning: Accuracy
    wer: float | None
    replies: dict[str, float | None]  # mean per REPLY_METRICS key; None: not computed


def build_board(
    systems: Sequence[str],
    answers: Iterable[AnswerRecord],
    transcripts: Iterable[tuple[str, str, str]],
    reply_scores: Iterable[tuple[str, str, float]],
) -> list[BoardRow]:
    """Return one row per system: answers, (system, reference, transcript) and (system, metric, value)."""
    by_level: dict[tuple[str, str], list[AnswerRecord]] = defaultdict(list)
    for answer in answers:
        by_level[(answer.system, answer.level)].append(answer)
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for system, reference, hypothesis in transcripts:
        pairs[system].append((reference, hypothesis))
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for system, metric, value in reply_scores:
        values[(system, metric)].append(value)
    rows = []
    for system in systems:
        means = {
            key: (sum(found) / len(found) if (found := values.get((system, key))) else None)
            for key, _ in REPLY_METRICS
        }
        rows.append(
            BoardRow(
                system,
                accuracy(by_level[(system, UNDERSTANDING)]),
                accuracy(by_level[(system, REASONING)]),
                corpus_wer(pairs[system]) if pairs[system] else None,
                means,
            )
        )
    return rows


def percent(value: float | None) -> str:
    return NOT_COMPUTED if value is None else f"{100 * value:.1f}"


def number(value: float | None, digits: int = 2) -> str:
    return NOT_COMPUTED if value is None else f"{value:.{digits}f}"


HEADINGS = (
    "System",
    "Understanding acc. (%)",
    "Understanding 95% CI",
    "Reasoning acc. (%)",
    "Reasoning 95% CI",
    "Unparsed",
    "WER (%)",
    *(heading for _, heading in REPLY_METRICS),
)


def _interval(acc: Accuracy) -> str:
    if acc.low is None or acc.high is None:
        return NOT_COMPUTED
    return f"{100 * acc.low:.1f}-{100 * acc.high:.1f}"


def cells(row: BoardRow) -> list[str]:
    """Return a row's cells as the page, CSV and LaTeX show them, in HEADINGS order."""
    return [
        row.system,
        percent(row.understanding.rate),
        _interval(row.understanding),
        percent(row.reasoning.rate),
        _interval(row.reasoning),
        str(row.understanding.unparsed + row.reasoning.unparsed),
        percent(row.wer),
        *(number(row.replies[key]) for key, _ in REPLY_METRICS),
    ]


def to_csv(rows: Sequence[BoardRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADINGS)
    for row in rows:
        # A leading =, +, - or @ would run as a formula in a spreadsheet (system names are typed in).
        values = cells(row)
        if values[0][:1] in ("=", "+", "-", "@"):
            values[0] = "'" + values[0]
        writer.writerow(values)
    return out.getvalue()


def _latex_escape(text: str) -> str:
    for char, escaped in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
    ):
        text = text.replace(char, escaped)
    return text


def to_latex(rows: Sequence[BoardRow]) -> str:
    """Return the main columns as a LaTeX tabular (accuracy, WER, C1-C4, VES); "--" for not computed."""
    keep = [0, 1, 3, 6, *range(7, 12)]
    lines = [
        r"\begin{tabular}{l" + "r" * (len(keep) - 1) + "}",
        r"\toprule",
        " & ".join(_latex_escape(HEADINGS[i]) for i in keep) + r" \\",
        r"\midrule",
    ]
    for row in rows:
        values = cells(row)
        lines.append(
            " & ".join("--" if values[i] == NOT_COMPUTED else _latex_escape(values[i]) for i in keep) + r" \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)
