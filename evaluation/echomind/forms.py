"""The admins' EchoMind forms: authoring a multiple-choice question on a delivery set's deliveries,
and a listening study over systems' spoken replies to deliveries."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction

from evaluation.echomind import taxonomy
from evaluation.echomind.choices import key_problem, letters_for, options_problem
from evaluation.echomind.models import Delivery, DeliverySet, Question, Reply
from evaluation.echomind.replies.listening import DEFAULT_INSTRUCTIONS
from evaluation.echomind.scoring import DELIVERY_ROLES
from evaluation.outputs.models import System
from evaluation.studies.creation.items import StudySpec
from evaluation.studies.design import DIMENSIONS
from evaluation.studies.forms import StudyForm


def known_question_types(level: str) -> list[str]:
    """Return a level's question types: EchoMind's, then those imported questions brought in."""
    shipped = list(taxonomy.QUESTION_TYPES.get(level, ()))
    found = Question.objects.filter(level=level).values_list("question_type", flat=True).distinct()
    return shipped + sorted(set(found) - set(shipped))


def _key_field(delivery: Delivery) -> str:
    return f"key_{delivery.role}"


class QuestionForm(forms.Form):
    """A question and its options, with an answer key for each delivery it is asked about.

    A new question keyed on several deliveries becomes one question per delivery (EchoMind asks
    the same question of the target, neutral and alternative delivery, each with its own key);
    a saved question is about one delivery.
    """

    question_id = forms.CharField(
        max_length=48,  # with "_alternative" added: the model's 60
        label="Question id",
        help_text="Unique. Keyed on several deliveries, each question's id gets _target, _neutral or "
        "_alternative added.",
    )
    level = forms.ChoiceField(choices=Question.Level.choices)
    question_type = forms.ChoiceField(label="Type", help_text="The type must belong to the level.")
    text = forms.CharField(label="Question", widget=forms.Textarea(attrs={"rows": 2}))
    options = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="One option a line, in order: the first is A, the next B, and so on (2 to 26).",
    )

    def __init__(
        self, *args: Any, delivery_set: DeliverySet, question: Question | None = None, **kwargs: Any
    ) -> None:
        if question is not None and "initial" not in kwargs:
            kwargs["initial"] = {
                "question_id": question.question_id,
                "level": question.level,
                "question_type": question.question_type,
                "text": question.text,
                "options": "\n".join(question.options),
                _key_field(question.delivery): question.answer,
            }
        super().__init__(*args, **kwargs)
        self.delivery_set, self.question = delivery_set, question
        self.deliveries = sorted(
            delivery_set.deliveries.select_related("attribute"), key=lambda d: DELIVERY_ROLES.index(d.role)
        )
        for delivery in self.deliveries:
            carried = delivery.attribute.label if delivery.attribute else "no attribute"
            self.fields[_key_field(delivery)] = forms.CharField(
                max_length=1,
                required=False,
                label=f"Answer key for the {delivery.role} delivery ({carried})",
                help_text="The correct option's letter; blank: not asked of this delivery.",
                widget=forms.TextInput(attrs={"size": 2, "autocomplete": "off"}),
            )
        kinds = self.fields["question_type"]
        assert isinstance(kinds, forms.ChoiceField)
        kinds.choices = [
            (label, [(kind, kind) for kind in known_question_types(level)])
            for level, label in Question.Level.choices
        ]

    def clean_question_type(self) -> str:
        # Checked against the chosen level in clean(): the select offers both levels' types.
        return str(self.cleaned_data["question_type"]).strip()

    def clean_options(self) -> list[str]:
        return [line.strip() for line in str(self.cleaned_data["options"]).splitlines() if line.strip()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        level, kind = data.get("level"), data.get("question_type")
        if level and kind and kind not in known_question_types(level):
            owner = next(
                (value for value, _ in Question.Level.choices if kind in known_question_types(value)), ""
            )
            self.add_error(
                "question_type",
                f"“{kind}” is not a type of the {level} level"
                + (f"; it is a {owner} type." if owner else "."),
            )
        keys = {
            delivery: str(data.get(_key_field(delivery)) or "").strip().upper()
            for delivery in self.deliveries
        }
        keyed = {delivery: key for delivery, key in keys.items() if key}
        options = data.get("options")
        if options is not None:
            problem = options_problem(options)
            if problem:
                self.add_error("options", f"{problem[0].upper()}{problem[1:]}.")
            else:
                for delivery, key in keyed.items():
                    if key_problem(options, key):
                        self.add_error(
                            _key_field(delivery),
                            f"The answer key {key} is not one of the options "
                            f"({', '.join(letters_for(options))}).",
                        )
        if not keyed:
            raise forms.ValidationError("Give an answer key for at least one delivery.")
        if self.question is not None and len(keyed) > 1:
            raise forms.ValidationError(
                "A saved question is about one delivery: keep one key, and add a new question for the others."
            )
        data["keys"] = keyed
        if "question_id" in data:
            wanted = self._ids(data["question_id"], keyed)
            taken = Question.objects.filter(question_id__in=wanted.values())
            if self.question is not None:
                taken = taken.exclude(pk=self.question.pk)
            if taken.exists():
                names = ", ".join(sorted(taken.values_list("question_id", flat=True)))
                self.add_error("question_id", f"Another question has the id {names}.")
        return data

    def _ids(self, stem: str, keyed: dict[Delivery, str]) -> dict[Delivery, str]:
        stem = stem.strip()
        if len(keyed) == 1:
            return {delivery: stem for delivery in keyed}
        return {delivery: f"{stem}_{delivery.role}" for delivery in keyed}

    def save(self) -> list[Question]:
        """Create the questions (or update the one being edited) and return them."""
        data = self.cleaned_data
        keyed: dict[Delivery, str] = data["keys"]
        ids = self._ids(data["question_id"], keyed)
        fields = {
            "level": data["level"],
            "question_type": data["question_type"],
            "text": data["text"].strip(),
            "options": data["options"],
        }
        with transaction.atomic():
            if self.question is None:
                return [
                    Question.objects.create(
                        question_id=ids[delivery], delivery=delivery, answer=key, **fields
                    )
                    for delivery, key in keyed.items()
                ]
            ((delivery, key),) = keyed.items()
            question = Question.objects.select_for_update().get(pk=self.question.pk)
            options_changed = question.options != fields["options"]
            for name, value in {
                **fields,
                "question_id": ids[delivery],
                "delivery": delivery,
                "answer": key,
            }.items():
                setattr(question, name, value)
            question.save()
            if options_changed:
                question.reread_answers()
            return [question]


def systems_with_spoken_replies() -> list[System]:
    """Return the systems with at least one EchoMind reply that has audio, by name."""
    spoken = Reply.objects.in_use().exclude(audio_key="").values("system_id")
    return list(System.objects.filter(pk__in=spoken).order_by("name"))


class ReplyStudyForm(StudyForm):
    """A listening study designed like any other (`StudyForm`), over the systems' spoken replies to
    EchoMind deliveries under one prompt strength: what only benchmark outputs have is left out."""

    prompt = forms.ChoiceField(
        label="Replies under the prompt strength",
        choices=Reply.Prompt.choices,
        initial=Reply.Prompt.NONE,
    )
    OUTPUT_ONLY = ("benchmark_version", "unit", "dialogues_per_system", "same_dialogues_for_all")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in (*self.OUTPUT_ONLY, "gold_good", "gold_harmful"):
            del self.fields[name]
        systems = systems_with_spoken_replies()
        systems_field: Any = self.fields["systems"]
        systems_field.queryset = System.objects.filter(pk__in=[system.pk for system in systems])
        systems_field.initial = [system.pk for system in systems]
        # The reference too: a system with no spoken reply is neither offered nor named here.
        reference_field: Any = self.fields["reference_system"]
        reference_field.queryset = systems_field.queryset
        self.fields["instructions"].initial = DEFAULT_INSTRUCTIONS
        self.fields["items_per_system"].label = "Deliveries per system"
        self.fields["items_per_system"].help_text = (
            "Sampled at random, stratified by dimension and delivery (target, neutral, alternative); "
            "the same deliveries for every system"
        )
        self.fields["ratings_per_output"].label = "Ratings per reply"
        self.fields["training_count"].help_text = "Practice replies shown first, not counted"
        self.fields[
            "trap_count"
        ].help_text = "Trapping items per evaluator; their audio says which score to choose"
        self.fields[
            "allowed_check_failures"
        ].help_text = "Failed trapping items tolerated before a rater is flagged"
        self.order_fields(
            ["name", "title_for_raters", "instructions", "systems", "prompt", "items_per_system"]
        )
        spoken = Reply.objects.in_use().exclude(audio_key="").values("delivery_id").distinct().count()
        self.fields["items_per_system"].initial = min(20, spoken) or 20
        # MOS: the audio dimensions; helpfulness (the reply's words) may be added.
        self.fields["dimensions"].initial = [key for key, d in DIMENSIONS.items() if d.modality == "audio"]

    def to_spec(self) -> StudySpec:
        """Return the study the cleaned form asks for; its samples come from `chosen_prompt()`'s replies."""
        data = self.cleaned_data
        return StudySpec(
            systems=list(data["systems"]),
            evaluators=list(data["evaluators"]),
            **{
                name: data[name]
                for name in (
                    "name",
                    "title_for_raters",
                    "instructions",
                    "items_per_system",
                    "ratings_per_output",
                    "dimensions",
                    "training_count",
                    "trap_count",
                    "trap_score",
                    "allowed_check_failures",
                    "seed",
                )
            },
        )

    def chosen_prompt(self) -> str:
        """Return the prompt strength whose replies are rated."""
        return str(self.cleaned_data["prompt"])
