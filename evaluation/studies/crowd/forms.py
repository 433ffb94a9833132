"""The admin's form for opening a study to external raters."""

from __future__ import annotations

from decimal import Decimal

from django import forms

from evaluation.studies.crowd.platforms import Platform


class CrowdLinkForm(forms.Form):
    platform = forms.ChoiceField(
        choices=[(p.value, p.name.title()) for p in Platform], initial=Platform.PROLIFIC
    )
    seats = forms.IntegerField(
        min_value=1,
        max_value=5000,
        initial=20,
        help_text="Places in the study: set the platform's places to the same",
    )
    ratings_per_output = forms.IntegerField(
        min_value=1,
        max_value=1000,
        required=False,
        help_text="Crowd ratings each rated sample gets over the places; empty: the study's own number",
    )
    completion_url = forms.CharField(
        required=False,
        max_length=500,
        help_text="Empty: Prolific's completion link (MTurk and generic: the code is shown)",
    )
    screened_out_url = forms.CharField(
        required=False, max_length=500, help_text="{code} is replaced by the code"
    )
    bonus = forms.DecimalField(min_value=Decimal(0), max_digits=7, decimal_places=2, initial=Decimal(0))
    requests_per_minute = forms.IntegerField(min_value=10, max_value=100_000, initial=120)

    def clean_completion_url(self) -> str:
        """Refuse a return link that is not a web address."""
        return _web_address(self.cleaned_data["completion_url"])

    def clean_screened_out_url(self) -> str:
        """Refuse a return link that is not a web address."""
        return _web_address(self.cleaned_data["screened_out_url"])


def _web_address(value: str) -> str:
    value = value.strip()
    if value and not value.startswith(("https://", "http://")):
        raise forms.ValidationError("Give a web address starting with https://.")
    return value
