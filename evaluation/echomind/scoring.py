"""EchoMind's scores over plain records (pure): accuracy with intervals, WER, the delivery effect.

Every figure here can be checked by hand (the tests do): accuracy is correct / asked with a Wilson
95% interval, an unparseable answer counting as asked and wrong (it is never guessed, and its
count is reported beside the rate); WER is the corpus rate, all word errors over all reference
words, after lower-casing and dropping punctuation; the delivery effect is the mean of paired
differences (the same case, system and prompt strength, target minus neutral or alternative)
with a t interval over those pairs.

Coverage (`webapp.lib.coverage`): every board figure carries n of N, the rows behind it of those
expected of every system: accuracy, the questions answered of the questions of its level; WER, the
deliveries transcribed of those any system transcribed; a reply metric, the replies scored with it
of the (delivery, prompt) replies any system gave.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from annotation.audio.speech.wer import word_errors
from webapp.lib.coverage import Coverage
from webapp.lib.latex import latex_escape
from webapp.lib.spreadsheet import NeutralWriter
from webapp.lib.stats import mean_t_interval, wilson_interval

TARGET, NEUTRAL, ALTERNATIVE = "target", "neutral", "alternative"
DELIVERY_ROLES = (TARGET, NEUTRAL, ALTERNATIVE)
UNDERSTANDING, REASONING, CONVERSATION = "understanding", "reasoning", "conversation"
LEVELS = (UNDERSTANDING, REASONING, CONVERSATION)
CONTRASTS = ((TARGET, NEUTRAL), (TARGET, ALTERNATIVE))


@dataclass(frozen=True)
class AnswerRecord:
    """One system's answer to one multiple-choice question, with what the question is about."""

    system: str
    question_id: str
    level: str
    question_type: str
    attribute: str
    dimension: str  # the coarse dimension of the attribute
    delivery: str  # target, neutral or alternative
    parsed: bool
    correct: bool


@dataclass(frozen=True)
class Accuracy:
    correct: int
    asked: int
    unparsed: int
    low: float | None
    high: float | None
    expected: int = 0  # N: the questions expected of every system (of this level)

    @property
    def rate(self) -> float | None:
        return self.correct / self.asked if self.asked else None

    @property
    def coverage(self) -> Coverage:
        """Return n of N: the questions answered, of those expected."""
        return Coverage(self.asked, self.expected)


def accuracy(records: Iterable[AnswerRecord]) -> Accuracy:
    """Return the accuracy of some answers: unparseable ones are asked and wrong, and counted."""
    rows = list(records)
    correct = sum(row.correct and row.parsed for row in rows)
    share = wilson_interval(correct, len(rows))
    return Accuracy(correct, len(rows), sum(not row.parsed for row in rows), share.low, share.high)


GROUPINGS: dict[str, Callable[[AnswerRecord], str]] = {
    "level": lambda row: row.level,
    "question type": lambda row: row.question_type,
    "attribute": lambda row: row.attribute,
    "dimension": lambda row: row.dimension,
}


def accuracy_by(records: Iterable[AnswerRecord], grouping: str) -> dict[tuple[str, str], Accuracy]:
    """Return the accuracy per (system, group) for a grouping of GROUPINGS, in sorted order; N of
    each is the questions of its group any system answered."""
    key = GROUPINGS[grouping]
    groups: dict[tuple[str, str], list[AnswerRecord]] = defaultdict(list)
    questions: dict[str, set[str]] = defaultdict(set)
    for row in records:
        groups[(row.system, key(row))].append(row)
        questions[key(row)].add(row.question_id)
    return {
        group: replace(accuracy(groups[group]), expected=len(questions[group[1]])) for group in sorted(groups)
    }


# --- WER ------------------------------------------------------------------------------------------

# The one WER rule (`annotation.audio.speech.wer`): the reply-audio WER uses it too.


def corpus_wer(pairs: Iterable[tuple[str, str]]) -> float | None:
    """Return the WER over (reference, hypothesis) pairs: all errors over all reference words."""
    counted = [word_errors(reference, hypothesis) for reference, hypothesis in pairs]
    total = sum(count.reference_words for count in counted)
    return sum(count.errors for count in counted) / total if total else None


# --- The delivery effect --------------------------------------------------------------------------


@dataclass(frozen=True)
class DeliveryScore:
    """One score of a system's reply to one delivery of a case (C1-C4, VES, BLEU ...)."""

    system: str
    case_id: str
    attribute: str  # the target delivery's attribute: the case's
    prompt: str  # prompt strength: none, basic, enhanced
    metric: str
    delivery: str
    value: float


@dataclass(frozen=True)
class DeliveryEffect:
    system: str
    attribute: str
    prompt: str
    metric: str
    contrast: str  # "target - neutral" or "target - alternative"
    pairs: int
    mean: float
    low: float | None  # None with a single pair: no interval
    high: float | None


def paired_interval(differences: Sequence[float]) -> tuple[float, float | None, float | None]:
    """Return the mean difference with its 95% t interval (None bounds for a single pair)."""
    return mean_t_interval(differences)


def delivery_effects(scores: Iterable[DeliveryScore]) -> list[DeliveryEffect]:
    """Return, per system, attribute, prompt strength and metric, how the target delivery's score
    differs from the neutral's and the alternative's, over the cases holding both (paired)."""
    by_case: dict[tuple[str, str, str, str], dict[str, dict[str, float]]] = defaultdict(dict)
    for score in scores:
        by_case[(score.system, score.attribute, score.prompt, score.metric)].setdefault(score.case_id, {})[
            score.delivery
        ] = score.value
    effects = []
    for (system, attribute, prompt, metric), cases in sorted(by_case.items()):
        for first, second in CONTRASTS:
            differences = [
                values[first] - values[second]
                for _, values in sorted(cases.items())
                if first in values and second in values
            ]
            if differences:
                mean, low, high = paired_interval(differences)
                effects.append(
                    DeliveryEffect(
                        system,
                        attribute,
                        prompt,
                        metric,
                        f"{first} - {second}",
                        len(differences),
                        mean,
                        low,
                        high,
                    )
                )
    return effects


# --- Text overlap with reference replies ----------------------------------------------------------


def bleu4(hypothesis: str, references: Sequence[str]) -> float:
    """Return sentence BLEU-4 (sacrebleu, 0-100) of a reply against its reference replies."""
    import sacrebleu

    return float(sacrebleu.sentence_bleu(hypothesis, list(references)).score)


def rouge_l(hypothesis: str, references: Sequence[str]) -> float:
    """Return ROUGE-L F1 (rouge-score, 0-1), the best over the reference replies."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    return max(scorer.score(reference, hypothesis)["rougeL"].fmeasure for reference in references)


# --- The EchoMind leaderboard --------------------------------------------------------------------
# Per system: understanding and reasoning accuracy (intervals, unparsed counts), transcription WER,
# C1-C4, VES, text overlap and audio quality; a metric nobody computed reads "not computed", never zero.

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
    wer_coverage: Coverage = field(
        default_factory=lambda: Coverage(0, 0)
    )  # deliveries transcribed, of expected
    reply_coverage: dict[str, Coverage] = field(default_factory=dict)  # per REPLY_METRICS key


@dataclass(frozen=True)
class BoardExpectations:
    """N of the board's figures: what every system is expected to have answered."""

    questions: dict[str, int]  # per level
    transcripts: int
    replies: int


def build_board(
    systems: Sequence[str],
    answers: Iterable[AnswerRecord],
    transcripts: Iterable[tuple[str, str, str]],
    reply_scores: Iterable[tuple[str, str, float]],
    expected: BoardExpectations | None = None,
) -> list[BoardRow]:
    """Return one row per system: answers, (system, reference, transcript) and (system, metric, value).

    `expected` gives N of each figure (default: the distinct questions any system answered per level,
    and the most transcripts and replies any system has)."""
    answers = list(answers)
    by_level: dict[tuple[str, str], list[AnswerRecord]] = defaultdict(list)
    for answer in answers:
        by_level[(answer.system, answer.level)].append(answer)
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for system, reference, hypothesis in transcripts:
        pairs[system].append((reference, hypothesis))
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for system, metric, value in reply_scores:
        values[(system, metric)].append(value)
    if expected is None:
        expected = BoardExpectations(
            questions={
                level: len({answer.question_id for answer in answers if answer.level == level})
                for level in LEVELS
            },
            transcripts=max((len(found) for found in pairs.values()), default=0),
            replies=max((len(found) for found in values.values()), default=0),
        )
    rows = []
    for system in systems:
        means = {
            key: (sum(found) / len(found) if (found := values.get((system, key))) else None)
            for key, _ in REPLY_METRICS
        }
        rows.append(
            BoardRow(
                system,
                replace(
                    accuracy(by_level[(system, UNDERSTANDING)]),
                    expected=expected.questions.get(UNDERSTANDING, 0),
                ),
                replace(
                    accuracy(by_level[(system, REASONING)]), expected=expected.questions.get(REASONING, 0)
                ),
                corpus_wer(pairs[system]) if pairs[system] else None,
                means,
                Coverage(len(pairs[system]), expected.transcripts),
                {
                    key: Coverage(len(values.get((system, key), [])), expected.replies)
                    for key, _ in REPLY_METRICS
                },
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


def coverages(row: BoardRow) -> dict[int, Coverage]:
    """Return n of N of each of a row's figures, by its index in HEADINGS (the name, intervals and
    unparsed counts are not figures of their own)."""
    found = {1: row.understanding.coverage, 3: row.reasoning.coverage, 6: row.wer_coverage}
    for index, (key, _) in enumerate(REPLY_METRICS, start=7):
        found[index] = row.reply_coverage.get(key, Coverage(0, 0))
    return found


def cells_with_coverage(row: BoardRow) -> list[tuple[str, str]]:
    """Return the page's cells: (figure, its n/N or "") in HEADINGS order."""
    found = coverages(row)
    return [(cell, found[index].text if index in found else "") for index, cell in enumerate(cells(row))]


# The CSV's n/N columns, after the figures: one per figure, named after it.
FIGURE_COLUMNS = (1, 3, 6, *range(7, 7 + len(REPLY_METRICS)))
COVERAGE_HEADINGS = tuple(f"{HEADINGS[index]} n/N" for index in FIGURE_COLUMNS)


def to_csv(rows: Sequence[BoardRow]) -> str:
    """Return the board as CSV: the page's figures, then each figure's n/N."""
    out = io.StringIO()
    # System names are typed in: NeutralWriter keeps a formula-like name from running in a spreadsheet.
    writer = NeutralWriter(out)
    writer.writerow([*HEADINGS, *COVERAGE_HEADINGS])
    for row in rows:
        found = coverages(row)
        writer.writerow([*cells(row), *(found[index].text for index in FIGURE_COLUMNS)])
    return out.getvalue()


def to_latex(rows: Sequence[BoardRow]) -> str:
    """Return the main columns as a LaTeX tabular (accuracy, WER, C1-C4, VES); "--" for not computed."""
    keep = [0, 1, 3, 6, *range(7, 12)]
    lines = [
        r"\begin{tabular}{l" + "r" * (len(keep) - 1) + "}",
        r"\toprule",
        " & ".join(latex_escape(HEADINGS[i]) for i in keep) + r" \\",
        r"\midrule",
    ]
    partial: list[str] = []
    for row in rows:
        values, counts = cells(row), coverages(row)
        shown = []
        for i in keep:
            text = "--" if values[i] == NOT_COMPUTED else latex_escape(values[i])
            # A figure on fewer rows than expected is marked, and its n/N listed under the table.
            if i in counts and not counts[i].complete:
                text += r"$^{\dagger}$" if values[i] != NOT_COMPUTED else ""
                partial.append(f"{latex_escape(row.system)} {latex_escape(HEADINGS[i])} {counts[i].text}")
            shown.append(text)
        lines.append(" & ".join(shown) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    # Notes as paragraphs under the tabular, so they wrap at the page's width.
    if rows:
        first = coverages(rows[0])
        lines.append(
            rf"\par{{\footnotesize Expected of every system: {first[1].expected} understanding and "
            rf"{first[3].expected} reasoning questions, {first[6].expected} transcripts, {first[7].expected} "
            r"replies (n/N per figure in the CSV export).}"
        )
    if partial:
        lines.append(
            rf"\par{{\footnotesize $^{{\dagger}}$ on fewer rows than expected (n/N): {'; '.join(partial)}.}}"
        )
    lines.append("")
    return "\n".join(lines)
