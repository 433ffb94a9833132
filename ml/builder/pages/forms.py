"""Forms of the spot-check queue and the build page.

The decision form shows the workbench's label fields (``annotation.labelling.schema``: the same
vocabularies, the same field names people read) but leaves checking the values to the schema's
``check_perception`` / ``check_tom`` (``queue.corrected_labels``), so there is one rule.
"""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.labelling.schema import CHOICES, PERCEPTION_TEXT_FIELDS, TOM_TEXT_FIELDS, field_label
from ml.builder.models import BuildSample, SpotCheck
from ml.builder.pages.queue import Decision
from ml.builder.pages.rules import (
    REASON_TITLES,
    REST_TITLES,
    THRESHOLD_TITLES,
    DecisionProblem,
    blamed_stage,
)
from ml.builder.stages import SAMPLE_STAGES, SPOT_CHECK_REASONS, SPOT_CHECK_VERDICTS, STAGE_TITLES
from webapp.lib.vocabulary import DEFAULT_STRATEGIES

PERCEPTION_CHOICE_FIELDS = ("polarity", "emotion", "intensity", "pitch", "energy", "rate", "intonation")
VERDICT_TITLES = {"keep": "Keep as it is", "fix": "Fix (edit below)", "drop": "Drop from the build"}


class DecisionForm(forms.Form):
    verdict = forms.ChoiceField(
        choices=[(verdict, VERDICT_TITLES[verdict]) for verdict in SPOT_CHECK_VERDICTS],
        widget=forms.RadioSelect,
    )
    reasons = forms.MultipleChoiceField(
        choices=[(reason, REASON_TITLES[reason]) for reason in SPOT_CHECK_REASONS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    stage = forms.ChoiceField(
        choices=[("", "The stage the reasons name")] + [(s, STAGE_TITLES[s]) for s in SAMPLE_STAGES],
        required=False,
        label="Problem let through by",
    )
    rest = forms.ChoiceField(
        choices=list(REST_TITLES.items()),
        widget=forms.RadioSelect,
        required=False,
        label="Dropping a turn of a dialogue: the rest of the dialogue",
    )
    remove_kept = forms.BooleanField(
        required=False, label="Also remove the turns of this dialogue a spot-check kept or fixed"
    )
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    response = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Response (fix only)"
    )
    recommended_strategies = forms.MultipleChoiceField(
        choices=list(DEFAULT_STRATEGIES),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label=field_label("tom.recommended_strategies"),
    )

    def __init__(
        self, *args: Any, sample: BuildSample, earlier: SpotCheck | None = None, **kwargs: Any
    ) -> None:
        # A decided check opens with the decision given (and a fix with its corrections).
        perception = {**(sample.perception or {}), **(earlier.perception if earlier else {})}
        tom = {**(sample.tom or {}), **(earlier.tom if earlier else {})}
        decided: dict[str, Any] = {}
        if earlier is not None and earlier.is_submitted:
            decided = {
                "verdict": earlier.verdict,
                "reasons": earlier.reasons,
                "stage": "" if earlier.stage == _stage_the_reasons_name(earlier) else earlier.stage,
                "note": earlier.note,
                "rest": earlier.rest,
            }
        initial = {
            **decided,
            "response": (earlier.response if earlier else "") or sample.response,
            "recommended_strategies": tom.get("recommended_strategies", []),
            **{f"perception_{name}": perception.get(name, "") for name in PERCEPTION_CHOICE_FIELDS},
            **{f"perception_{name}": perception.get(name, "") for name in PERCEPTION_TEXT_FIELDS},
            **{f"tom_{name}": tom.get(name, "") for name in TOM_TEXT_FIELDS},
        }
        kwargs["initial"] = {**initial, **kwargs.get("initial", {})}
        super().__init__(*args, **kwargs)
        for name in PERCEPTION_CHOICE_FIELDS:
            # A select of the schema's vocabulary; the value is checked by check_perception.
            self.fields[f"perception_{name}"] = forms.CharField(
                required=False,
                label=field_label(f"perception.{name}"),
                widget=forms.Select(choices=[("", "—")] + [(value, value) for value in CHOICES[name]]),
            )
        for name in PERCEPTION_TEXT_FIELDS:
            self.fields[f"perception_{name}"] = forms.CharField(
                required=False, label=field_label(f"perception.{name}")
            )
        for name in TOM_TEXT_FIELDS:
            self.fields[f"tom_{name}"] = forms.CharField(
                required=False, label=field_label(f"tom.{name}"), widget=forms.Textarea(attrs={"rows": 2})
            )

    def label_fields(self) -> list[forms.BoundField]:
        """Return the perception and ToM fields a fix edits, in workbench order (strategies apart)."""
        names = [f"perception_{n}" for n in (*PERCEPTION_CHOICE_FIELDS, *PERCEPTION_TEXT_FIELDS)]
        names += [f"tom_{n}" for n in TOM_TEXT_FIELDS]
        return [self[name] for name in names]

    def decision(self) -> Decision:
        """Return the decision; label edits only for a fix."""
        data = self.cleaned_data
        fix = data["verdict"] == "fix"
        perception = {
            name: data[f"perception_{name}"] for name in (*PERCEPTION_CHOICE_FIELDS, *PERCEPTION_TEXT_FIELDS)
        }
        tom: dict[str, Any] = {name: data[f"tom_{name}"] for name in TOM_TEXT_FIELDS}
        tom["recommended_strategies"] = list(data["recommended_strategies"])
        return Decision(
            verdict=data["verdict"],
            reasons=tuple(data["reasons"]),
            stage=data["stage"],
            note=data["note"],
            perception=perception if fix else {},
            tom=tom if fix else {},
            response=data["response"] if fix else "",
            rest=data["rest"] if data["verdict"] == "drop" else "",
            remove_kept=data["remove_kept"],
        )


def _stage_the_reasons_name(check: SpotCheck) -> str:
    try:
        return blamed_stage(check.verdict, check.reasons)
    except DecisionProblem:  # "other" alone names no stage: the annotator chose one
        return ""


class DrawForm(forms.Form):
    """How many finished samples to send to annotators: a percentage or a count."""

    percent = forms.FloatField(
        min_value=0.1, max_value=100, required=False, label="Percent of finished samples"
    )
    count = forms.IntegerField(min_value=1, required=False, label="or a number of samples")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("percent") is not None and data.get("count") is not None:
            raise forms.ValidationError("Give a percentage or a count, not both.")
        return data

    def size(self) -> dict[str, Any]:
        """Return the keyword arguments of ``queue.draw_spot_checks`` (none: the build's rate)."""
        if self.cleaned_data.get("count") is not None:
            return {"count": self.cleaned_data["count"]}
        if self.cleaned_data.get("percent") is not None:
            return {"fraction": self.cleaned_data["percent"] / 100}
        return {}


class TightenForm(forms.Form):
    setting = forms.ChoiceField(choices=list(THRESHOLD_TITLES.items()), label="Filter")
    value = forms.FloatField(label="New, stricter value")


class StartBuildForm(forms.Form):
    """The arguments of ``manage.py start_build``; ``ml.builder.launch`` checks them for both."""

    name = forms.CharField(max_length=200)
    single = forms.IntegerField(min_value=0, initial=1000, label="Single-turn samples")
    dialogues = forms.IntegerField(min_value=0, initial=10, label="Five-turn dialogues")
    seed = forms.IntegerField(min_value=0, initial=0)
    config = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false"}),
        label="Configuration (JSON)",
        help_text="The settings of ml.builder.config.BuildConfig: the same file start_build --config reads.",
    )
