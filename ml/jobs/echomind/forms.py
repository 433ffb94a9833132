"""The form an admin starts EchoChat on the EchoMind delivery sets with (``ECHOMIND_INFERENCE_JOB``)."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.echomind.models import Delivery, Question, Reply
from ml.core.config import INFERENCE_BATCH_SIZE, INFERENCE_MAX_NEW_TOKENS
from ml.jobs.forms import DEVICE_CHOICES, latest_start, name_the_system, start_model_choices
from ml.jobs.models import Checkpoint


def ready_deliveries() -> int:
    """Return how many deliveries have an accepted take, the ones the job answers."""
    return Delivery.objects.filter(item__recording__isnull=False).count()


class EchoMindInferenceJobForm(forms.Form):
    start_note = (
        "It hears the deliveries' accepted takes as they are when it runs (no snapshot; its result "
        "lists the takes heard), and its answers replace the system's earlier EchoMind answers."
    )
    start_from = forms.ChoiceField(
        label="Start from", help_text="By default the newest RL checkpoint, else the newest SFT one."
    )
    system_name = forms.CharField(
        max_length=120,
        required=False,
        help_text="Blank: 'EchoChat' and the checkpoint's name (its EchoEval outputs' system, if any)",
    )
    prompts = forms.MultipleChoiceField(
        label="Reply under the prompt strengths",
        choices=Reply.Prompt.choices,
        initial=[Reply.Prompt.NONE],
        widget=forms.CheckboxSelectMultiple,
        help_text="One spoken reply per delivery and strength (enhanced names the case's dimension)",
    )
    max_new_tokens = forms.IntegerField(min_value=1, initial=INFERENCE_MAX_NEW_TOKENS)
    batch_size = forms.IntegerField(min_value=1, initial=INFERENCE_BATCH_SIZE)
    device = forms.ChoiceField(choices=DEVICE_CHOICES, initial="auto")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        start: Any = self.fields["start_from"]
        start.choices = start_model_choices()
        start.initial = latest_start(Checkpoint.Kind.RL, Checkpoint.Kind.SFT)
        deliveries = ready_deliveries()
        questions = Question.objects.in_use().filter(delivery__item__recording__isnull=False).count()
        self.fields[
            "prompts"
        ].help_text += f". Now: {deliveries} deliveries with an accepted take, {questions} questions on them."

    def clean(self) -> dict[str, Any]:
        data = name_the_system(self, super().clean() or {})
        if not ready_deliveries():
            raise forms.ValidationError("No EchoMind delivery has an accepted take yet: nothing to answer.")
        return data

    def chosen_splits(self) -> list[str] | None:
        """Return None: the job reads the delivery sets, not a dataset snapshot."""
        return None

    def job_parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "start_from": data["start_from"],
            "system_name": data["system_name"],
            "prompts": list(data["prompts"]),
            "max_new_tokens": data["max_new_tokens"],
            "batch_size": data["batch_size"],
            "device": data["device"],
            "dtype": "auto",
        }
