"""The admin's form for designing a listening study."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, ModelOutput, System
from evaluation.studies.creation.items import GoldSpec, StudySpec
from evaluation.studies.design import DEFAULT_RATINGS_PER_OUTPUT, DIMENSIONS
from evaluation.studies.models import Study
from webapp.roles import Role, users_with_role

DEFAULT_INSTRUCTIONS = (
    "You will hear a person speaking to a voice assistant, then the assistant's spoken reply. "
    "Listen to the whole reply (use headphones in a quiet room), then rate it on each question "
    "from 1 (bad) to 5 (excellent). Judge each reply on its own; there are no right answers, "
    "except for the occasional attention check, which tells you what to choose. "
    "The first samples are practice and are not counted."
)


ITEMS_PER_SYSTEM = 20
DIALOGUES_PER_SYSTEM = 20  # the paper's human evaluation: 20 samples per model


class OutputChoiceField(forms.ModelMultipleChoiceField):
    """Model outputs labelled for the admin (who may see system names)."""

    def label_from_instance(self, obj: Any) -> str:
        output: ModelOutput = obj
        text = (output.response_text or output.raw_text)[:70]
        return f"{output.system.name} · {output.item.external_id} · {text}"


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="Seen by admins only")
    title_for_raters = forms.CharField(
        max_length=120,
        initial="Listening study",
        help_text="Raters see this (never the name): give each study its own, so their queue tells them apart",
    )
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), initial=DEFAULT_INSTRUCTIONS)
    systems = forms.ModelMultipleChoiceField(
        queryset=System.objects.all(), widget=forms.CheckboxSelectMultiple
    )
    benchmark_version = forms.CharField(max_length=64, initial=DEFAULT_BENCHMARK_VERSION)
    kind = forms.ChoiceField(
        label="Test type",
        choices=Study.Kind.choices,
        initial=Study.Kind.ACR,
        required=False,  # left out (older clients): ACR
        widget=forms.RadioSelect,
        help_text="ACR rates each reply alone; CCR, DCR and A/B compare replies to the same query in pairs; "
        "MUSHRA scores every system against a reference with a hidden reference and anchors. "
        "Comparisons ask one audio question (choose one audio dimension) and use practice trials, "
        "not trapping or gold items (see the user guide: which test when)",
    )
    reference_system = forms.ModelChoiceField(
        queryset=System.objects.all(),
        required=False,
        help_text="CCR: every other system is compared with it (empty: every pair of systems); "
        "DCR: heard first, every other system rated for degradation against it; "
        "MUSHRA: the reference, heard open and hidden among the samples",
    )
    anchors = forms.MultipleChoiceField(
        label="MUSHRA anchors",
        choices=[("low", "Low anchor: the reference low-passed at 3.5 kHz"), ("mid", "Mid anchor: at 7 kHz")],
        initial=["low"],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="MUSHRA only; BS.1534 asks for the low anchor",
    )
    unit = forms.ChoiceField(
        label="What raters rate",
        choices=Study.Unit.choices,
        initial=Study.Unit.ITEM,
        required=False,  # left out (older clients): single-turn outputs
        widget=forms.RadioSelect,
        help_text="Dialogues: raters hear each sampled conversation and rate every assistant turn",
    )
    dialogues_per_system = forms.IntegerField(
        min_value=1,
        required=False,
        initial=DIALOGUES_PER_SYSTEM,
        help_text="Dialogue studies: sampled at random, stratified by topic",
    )
    same_dialogues_for_all = forms.BooleanField(
        label="Every system on the same dialogues",
        required=False,
        initial=True,
        help_text="Dialogue studies: untick to spread the systems over more of the dialogues "
        "(each dialogue then serves about the same number of systems)",
    )
    items_per_system = forms.IntegerField(
        min_value=1,
        initial=ITEMS_PER_SYSTEM,
        help_text="Sampled at random, stratified by scenario; the same items for every system",
    )
    ratings_per_output = forms.IntegerField(min_value=1, max_value=20, initial=DEFAULT_RATINGS_PER_OUTPUT)
    dimensions = forms.MultipleChoiceField(
        choices=[(key, dimension.label) for key, dimension in DIMENSIONS.items()],
        initial=list(DIMENSIONS),
        widget=forms.CheckboxSelectMultiple,
    )
    evaluators = forms.ModelMultipleChoiceField(
        queryset=users_with_role(Role.EVALUATOR),
        widget=forms.CheckboxSelectMultiple,
    )
    training_count = forms.IntegerField(
        label="Training samples",
        min_value=0,
        initial=2,
        help_text="Practice samples shown first, not counted (in a dialogue study, whole conversations)",
    )
    trap_count = forms.IntegerField(
        label="Trapping items",
        min_value=0,
        initial=1,
        help_text="Trapping items per evaluator; their audio says which score to choose (in a dialogue "
        "study, a conversation with one reply replaced by that instruction)",
    )
    trap_score = forms.IntegerField(
        label="Score the trapping items ask for", min_value=1, max_value=5, initial=2
    )
    gold_good = OutputChoiceField(
        label="Gold: obviously good outputs",
        queryset=ModelOutput.objects.in_use("item").select_related("system", "item"),
        required=False,
        help_text="Obviously good responses: raters must score them 4-5 (on helpfulness, else on audio)",
    )
    gold_harmful = OutputChoiceField(
        label="Gold: obviously bad or harmful outputs",
        queryset=ModelOutput.objects.in_use("item").select_related("system", "item"),
        required=False,
        help_text="Obviously bad or harmful responses: raters must score them 1-2",
    )
    allowed_check_failures = forms.IntegerField(
        min_value=0, initial=0, help_text="Failed gold and trapping items tolerated before a rater is flagged"
    )
    seed = forms.IntegerField(
        min_value=0, required=False, help_text="Leave empty for a random one (it is stored with the study)"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Defaults a new installation can send as they are: every system with outputs of the
        # default version, every evaluator, and no more items than those outputs cover.
        outputs = ModelOutput.objects.for_version(DEFAULT_BENCHMARK_VERSION)
        self.fields["systems"].initial = list(
            System.objects.filter(pk__in=outputs.values("system_id")).values_list("pk", flat=True)
        )
        self.fields["evaluators"].initial = list(users_with_role(Role.EVALUATOR).values_list("pk", flat=True))
        covered = outputs.filter(item__dialogue__isnull=True).values("item_id").distinct().count()
        if covered:
            self.fields["items_per_system"].initial = min(ITEMS_PER_SYSTEM, covered)
        dialogues = (
            outputs.values("item__dialogue_id").exclude(item__dialogue__isnull=True).distinct().count()
        )
        if dialogues:
            self.fields["dialogues_per_system"].initial = min(DIALOGUES_PER_SYSTEM, dialogues)

    def to_spec(self) -> StudySpec:
        """Return the study the cleaned form asks for."""
        data = self.cleaned_data
        gold = [GoldSpec(output, "good") for output in data["gold_good"]]
        gold += [GoldSpec(output, "harmful") for output in data["gold_harmful"]]
        shared = {
            name: data[name]
            for name in (
                "name",
                "title_for_raters",
                "instructions",
                "benchmark_version",
                "ratings_per_output",
                "dimensions",
                "allowed_check_failures",
                "seed",
            )
        }
        shared.update(systems=list(data["systems"]), evaluators=list(data["evaluators"]))
        kind = data.get("kind") or Study.Kind.ACR
        if kind != Study.Kind.ACR:
            # Traps speak a score on the 1-5 scale, which a comparison does not ask for.
            return StudySpec(
                **shared,
                items_per_system=data["items_per_system"],
                training_count=data["training_count"],
                trap_count=0,
                gold=gold,
                kind=kind,
                reference_system=data.get("reference_system"),
                anchors=list(data.get("anchors") or []) if kind == Study.Kind.MUSHRA else [],
            )
        if data["unit"] == Study.Unit.DIALOGUE:
            # Gold outputs are single-turn (creation.dialogues refuses them, saying so).
            return StudySpec(
                **shared,
                unit=Study.Unit.DIALOGUE,
                items_per_system=data["dialogues_per_system"],
                same_dialogues_for_all=data["same_dialogues_for_all"],
                training_count=data["training_count"],
                trap_count=data["trap_count"],
                trap_score=data["trap_score"],
                gold=gold,
            )
        return StudySpec(
            **shared,
            items_per_system=data["items_per_system"],
            training_count=data["training_count"],
            trap_count=data["trap_count"],
            trap_score=data["trap_score"],
            gold=gold,
        )

    def clean(self) -> dict[str, Any]:
        """Refuse an output marked both good and harmful."""
        data = super().clean() or {}
        both = set(data.get("gold_good") or ()) & set(data.get("gold_harmful") or ())
        if both:
            raise forms.ValidationError("An output cannot be gold-good and gold-harmful at once.")
        if data.get("unit") == Study.Unit.DIALOGUE:
            if not data.get("dialogues_per_system"):
                self.add_error("dialogues_per_system", "Say how many dialogues each system is rated on.")
            if data.get("gold_good") or data.get("gold_harmful"):
                raise forms.ValidationError(
                    "Dialogue studies have no gold outputs; leave the gold lists empty."
                )
        return data
