"""The data field of the training forms: completed annotations, or a finished build's export."""

from __future__ import annotations

from typing import Any

from django import forms

from ml.builder.models import Build
from ml.jobs.builds.sources import ANNOTATIONS, chosen_build, source_choices


class BuildSource(forms.Form):
    """A training form's choice of data; mixed in before the form's own base (``ml.jobs.forms``)."""

    source = forms.ChoiceField(
        label="Data",
        initial=ANNOTATIONS,
        required=False,  # left out: the annotations, as before the choice existed
        help_text="Completed annotations of the chosen splits, or every exported training record of a "
        "finished EchoDialogue build (the splits are not used then)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["source"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = source_choices()
        if "splits" in self.fields:
            self.fields["splits"].required = False  # not for a build; checked in clean

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if (data.get("source") or ANNOTATIONS) == ANNOTATIONS and not data.get("splits"):
            self.add_error("splits", "Choose at least one split, or a build as the data.")
        return data

    def chosen_build(self) -> Build | None:
        """Return the build whose export the job trains on; None: the splits' annotations."""
        return chosen_build(self.cleaned_data.get("source") or ANNOTATIONS)

    def chosen_splits(self) -> list[str]:
        """Return the chosen splits; none when the job trains on a build."""
        return [] if self.chosen_build() is not None else list(self.cleaned_data.get("splits") or [])
