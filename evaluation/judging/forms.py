"""Forms of the judging pages: judge configurations, judge runs, rubric samples, hand scoring."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.judging.human_scoring import HandScore
from evaluation.judging.models import JudgeConfig
from evaluation.judging.prompts import SUBSCORE_GUIDE
from evaluation.judging.rubrics import (
    FLAG_CAPS,
    MISSING_MENTAL_STATE,
    MISSING_STRATEGY,
    MODALITY_CONFLICT_FLAG,
    SUBSCORE_RANGES,
)
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, System
from webapp.lib.vocabulary import MODALITY_CONFLICT
from webapp.roles import Role, users_with_role

FLAG_LABELS = {
    "empty_or_off_topic": "Empty or off-topic",
    "wrong_primary_emotion": "Wrong primary emotion",
    MODALITY_CONFLICT_FLAG: "Missed the conflict between words and voice",
    MISSING_MENTAL_STATE: "Context, latent need or core demand missing",
    MISSING_STRATEGY: "No strategy",
    "recommends_not_recommended": "Proposes a not-recommended strategy",
    "no_recommended_overlap": "No recommended strategy",
    "empty_or_off_task": "Empty or off-task",
    "harmful": "Harmful or dismissive",
    "empty_response": "Empty response",
    "hard_failure": "Fails the task",
    "unintelligible": "Unintelligible",
    "inappropriate_voice": "Voice clashes with the user's state",
}


class JudgeConfigForm(forms.ModelForm):
    # A CharField: the model's clean() checks the address (webapp.lib.url_shape, then the outbound
    # policy), where Django's URLField refused the bare host name of the example below.
    base_url = forms.CharField(
        required=False,
        max_length=300,
        help_text="OpenAI-compatible base URL, e.g. https://api.openai.com/v1 or http://gpu-box:8000/v1 (vLLM)",
    )

    class Meta:
        model = JudgeConfig
        fields = [
            "name",
            "base_url",
            "model",
            "api_key_env",
            "timeout_s",
            "max_concurrency",
            "max_retries",
            "temperature",
            "json_mode",
            "attach_audio",
            "offline_heuristic",
            "members",
        ]
        help_texts = {
            "api_key_env": "A variable named ECHOSTUDIO_JUDGE_KEY_…, e.g. ECHOSTUDIO_JUDGE_KEY_OPENAI; "
            "blank: ECHOSTUDIO_JUDGE_API_KEY",
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("offline_heuristic") and data.get("attach_audio"):
            self.add_error(
                "attach_audio", "The offline heuristic reads text only; it cannot listen to audio."
            )
        members = list(data.get("members") or [])
        if members:
            # One level only: an ensemble of ensembles (or of itself) would ask its judges in a loop.
            nested = [
                member.name for member in members if member.pk == self.instance.pk or member.is_ensemble
            ]
            if nested:
                self.add_error(
                    "members", f"An ensemble's members are single judges, not {', '.join(nested)}."
                )
            if data.get("offline_heuristic") or data.get("base_url"):
                self.add_error("members", "An ensemble has members instead of an endpoint or the heuristic.")
        return data


class JudgeRunForm(forms.Form):
    system = forms.ModelChoiceField(queryset=System.objects.all())
    benchmark_version = forms.CharField(max_length=64, initial=DEFAULT_BENCHMARK_VERSION)
    judge_config = forms.ModelChoiceField(queryset=JudgeConfig.objects.all(), label="Judge")
    retry_errors = forms.BooleanField(required=False, help_text="Judge the stored judge errors again")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Preselected, so the form can be sent as it comes whenever there is one of each. The judge
        # only while there is a single one: with several, the person names the judge whose scores
        # the leaderboard will show (defaulting to the newest changed results when one was added).
        self.fields["system"].initial = System.objects.order_by("pk").values_list("pk", flat=True).first()
        judges = list(JudgeConfig.objects.values_list("pk", flat=True)[:2])
        self.fields["judge_config"].initial = judges[0] if len(judges) == 1 else None
        self.fields["judge_config"].empty_label = "Choose a judge"  # type: ignore[attr-defined]


class RubricSampleForm(forms.Form):
    name = forms.CharField(max_length=120)
    benchmark_version = forms.CharField(max_length=64, initial=DEFAULT_BENCHMARK_VERSION)
    n_items = forms.IntegerField(min_value=1, max_value=2000, initial=20, label="Items")
    systems = forms.ModelMultipleChoiceField(
        queryset=System.objects.all(), required=False, help_text="Blank: every system with outputs"
    )
    evaluators = forms.ModelMultipleChoiceField(queryset=users_with_role(Role.EVALUATOR))
    seed = forms.IntegerField(required=False, help_text="Blank: a fresh random draw")


class HandRubricForm(forms.Form):
    """Every applicable stage's sub-scores (radio buttons over each range) and flags, one comment."""

    comment = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def __init__(self, *args: Any, stages: tuple[str, ...], scenario: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stages = stages
        for stage in stages:
            for name, (low, high) in SUBSCORE_RANGES[stage].items():
                self.fields[f"{stage}__{name}"] = forms.TypedChoiceField(
                    label=name.replace("_", " ").capitalize(),
                    help_text=SUBSCORE_GUIDE[stage][name],
                    choices=[(value, str(value)) for value in range(low, high + 1)],
                    coerce=int,
                    widget=forms.RadioSelect(attrs={"class": "scale"}),
                )
            flags = [
                flag
                for flag in FLAG_CAPS[stage]
                if flag != MODALITY_CONFLICT_FLAG or scenario == MODALITY_CONFLICT
            ]
            self.fields[f"{stage}__flags"] = forms.MultipleChoiceField(
                label="Hard failures",
                choices=[(flag, f"{FLAG_LABELS[flag]} (cap {FLAG_CAPS[stage][flag]})") for flag in flags],
                required=False,
                widget=forms.CheckboxSelectMultiple,
            )

    def stage_fields(self) -> list[tuple[str, list[forms.BoundField], forms.BoundField]]:
        """Return (stage, sub-score fields, flags field) for the template."""
        return [
            (
                stage,
                [self[f"{stage}__{name}"] for name in SUBSCORE_RANGES[stage]],
                self[f"{stage}__flags"],
            )
            for stage in self.stages
        ]

    def hand_scores(self) -> dict[str, HandScore]:
        """Return the cleaned scores per stage (call after is_valid)."""
        return {
            stage: HandScore(
                subscores={name: self.cleaned_data[f"{stage}__{name}"] for name in SUBSCORE_RANGES[stage]},
                flags=list(self.cleaned_data[f"{stage}__flags"]),
            )
            for stage in self.stages
        }
