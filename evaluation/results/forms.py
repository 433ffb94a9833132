"""Forms of the results pages: which benchmark version and judge a page shows."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.judging.models import JudgeConfig, RubricSample
from evaluation.results.reports import DEFAULT_CORRECT_THRESHOLD


class ResultsFilterForm(forms.Form):
    """The version and judge whose results a page shows (GET parameters)."""

    version = forms.ChoiceField(label="Benchmark version", required=False)
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.all(), required=False, label="Judge")

    def __init__(self, *args: Any, versions: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["version"].choices = [(version, version) for version in versions]  # type: ignore[attr-defined]


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
