"""Forms of the results pages: which benchmark version and judge a page shows."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.judging.models import JudgeConfig, RubricSample
from evaluation.results.dialogues.reports import MAX_FALL_THRESHOLD
from evaluation.results.dialogues.scores import DEFAULT_FALL_THRESHOLD
from evaluation.results.reports import DEFAULT_CORRECT_THRESHOLD, ITEM_SETS, SINGLE


class ResultsFilterForm(forms.Form):
    """The version, judge and item set whose results a page shows (GET parameters)."""

    version = forms.ChoiceField(label="Benchmark version", required=False)
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.all(), required=False, label="Judge")
    set = forms.ChoiceField(label="Set", choices=list(ITEM_SETS.items()), required=False, initial=SINGLE)

    def __init__(self, *args: Any, versions: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["version"].choices = [(version, version) for version in versions]  # type: ignore[attr-defined]


def item_set_of(form: ResultsFilterForm) -> str:
    """Return the item set a results form asks for (single-turn EchoEval unless it names another);
    a bad value in another field does not send the reader to the other set."""
    chosen = form.data.get("set") if form.is_bound else None
    return chosen if chosen in ITEM_SETS else SINGLE


class LeaderboardForm(ResultsFilterForm):
    fall_threshold = forms.FloatField(
        min_value=0.1,
        max_value=MAX_FALL_THRESHOLD,
        required=False,
        initial=DEFAULT_FALL_THRESHOLD,
        label="Fall threshold",
        help_text="Dialogues: a turn falls when its overall score (Table 2's All, out of 10) is below this",
    )


def fall_threshold_of(form: ResultsFilterForm) -> float:
    """Return the dialogue fall threshold a leaderboard form asks for, or the default."""
    return (form.cleaned_data.get("fall_threshold") if form.is_valid() else None) or DEFAULT_FALL_THRESHOLD


class ErrorPropagationForm(ResultsFilterForm):
    threshold = forms.FloatField(
        min_value=0.05,
        max_value=1.0,
        required=False,
        initial=DEFAULT_CORRECT_THRESHOLD,
        help_text="A stage is correct when its score is at least this share of the stage maximum",
    )


class AgreementForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.all(), required=False, label="Judge")
    sample = forms.ModelChoiceField(
        queryset=RubricSample.objects.all(), required=False, empty_label="All hand scores"
    )


class JudgeAuditForm(forms.Form):
    """What to audit: a judge, the outputs of a benchmark version, k, and judges to compare with."""

    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.all(), label="Judge")
    version = forms.ChoiceField(label="Benchmark version")
    repeats = forms.IntegerField(min_value=2, max_value=10, initial=3, label="Repeats (k)")
    max_outputs = forms.IntegerField(min_value=3, max_value=500, initial=30, label="Outputs")
    compare_with = forms.ModelMultipleChoiceField(
        queryset=JudgeConfig.objects.all(), required=False, label="Compare with"
    )

    def __init__(self, *args: Any, versions: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["version"].choices = [(version, version) for version in versions]  # type: ignore[attr-defined]
