"""The forms admins start EchoChat jobs with; defaults retrain from the latest gold on the train split.

Each form's ``job_parameters()`` returns the job's parameters in the shapes ``ml.jobs.launch``
documents; ``chosen_splits()`` the splits its dataset snapshot covers. The web process never loads torch,
so the training configs are written as plain dicts here and read back by the worker; the fields'
defaults come from the torch-free config dataclasses of ``ml.core.config``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from annotation.recording.models import Split
from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, System
from ml.core.ablations import NO_ABLATION, RL_ABLATIONS, SFT_ABLATIONS
from ml.core.config import (
    AAA_OBJECTIVE_LABELS,
    ADVANTAGE_MODES,
    INFERENCE_BATCH_SIZE,
    INFERENCE_MAX_NEW_TOKENS,
    AdvantageMode,
    LoraSettings,
    RewardModelConfig,
    RewardTrainingConfig,
    RlConfig,
    SftConfig,
)
from ml.jobs.builds.forms import BuildSource
from ml.jobs.checkpoint_registry import START_TINY, TINY_BASE_NAME, start_choice_value
from ml.jobs.datasets import ready_counts
from ml.jobs.dialogues.history import INFERENCE_TURN_CHOICES
from ml.jobs.models import Checkpoint, DatasetSnapshot
from webapp.lib.outbound import JUDGE_KEY_ENV_PREFIX, key_variable_problem
from webapp.outbound import named_key_problem, outbound_url_problem

DEVICE_CHOICES = (
    ("auto", "Automatic: the worker's GPU (bf16), else its CPU"),
    ("cuda", "GPU"),
    ("cpu", "CPU"),
)
MODEL_KINDS_FOR_TRAINING = (Checkpoint.Kind.BASE, Checkpoint.Kind.SFT, Checkpoint.Kind.RL)
_ADVANTAGE_MODE_LABELS: dict[AdvantageMode, str] = {
    "sdca": "SDCA: each span its own advantage",
    "grpo": "Vanilla GRPO (baseline)",
}
# The fields' initial values are the config dataclasses' defaults (ml.core.config), never repeated here.
SFT_DEFAULTS = SftConfig()
RL_DEFAULTS = RlConfig()
REWARD_DEFAULTS = RewardTrainingConfig()
# SFT itself defaults to full fine-tuning; the form offers LoRA at its default rank, which fits one GPU.
RL_LORA_DEFAULTS = RL_DEFAULTS.lora or LoraSettings()


def base_model_choice() -> tuple[str, str]:
    """Return the choice for the configured base model, or the tiny demo model when none is set."""
    configured = settings.ECHOCHAT_BASE_MODEL
    if configured:
        return configured, f"Base model from settings ({configured})"
    return START_TINY, "Tiny demo model (random weights; runs on a CPU; ECHOSTUDIO_BASE_MODEL is unset)"


def start_model_choices() -> list[tuple[str, str]]:
    """Return what a run can start from: the base model, then every EchoChat checkpoint, newest first."""
    choices = [base_model_choice()]
    for checkpoint in Checkpoint.objects.filter(kind__in=MODEL_KINDS_FOR_TRAINING).exclude(
        name=TINY_BASE_NAME
    ):
        choices.append(
            (start_choice_value(checkpoint), f"{checkpoint.name} ({checkpoint.get_kind_display()})")
        )
    return choices


def latest_start(*kinds: str) -> str:
    """Return the choice of the newest checkpoint of the first kind that has one, else the base model."""
    for kind in kinds:
        checkpoint = Checkpoint.objects.filter(kind=kind).exclude(name=TINY_BASE_NAME).first()
        if checkpoint is not None:
            return start_choice_value(checkpoint)
    return base_model_choice()[0]


def name_the_system(form: forms.Form, data: dict[str, Any]) -> dict[str, Any]:
    """Name a blank system "EchoChat <model>"; refuse another system's name (not ours to replace)."""
    if "start_from" in data and not data.get("system_name"):
        label = str(dict(start_model_choices()).get(data["start_from"], data["start_from"])).split(" (")[0]
        data["system_name"] = f"EchoChat {label}"[:120]
    name = data.get("system_name")
    if name and System.objects.filter(name=name).exclude(category=System.Category.OURS).exists():
        form.add_error("system_name", "A system that is not EchoChat has this name; choose another.")
    return data


def _choice_field(form: forms.Form, name: str) -> forms.ChoiceField:
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    return field


class _JobForm(forms.Form):
    """Fields every dataset-backed job has: the splits and the device."""

    purpose: str = ""
    default_splits: tuple[str, ...] = (Split.TRAIN,)
    # Offered instead when no default split has a ready item; never the test split, which
    # training would leak into the model.
    fallback_splits: tuple[str, ...] = (Split.DEV,)

    splits = forms.MultipleChoiceField(
        choices=Split.echoeval_choices(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Items with an accepted recording in these splits; training also needs current gold. "
        "Training on the test split leaks the benchmark into the model.",
    )
    device = forms.ChoiceField(choices=DEVICE_CHOICES, initial="auto")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        counts = ready_counts(self.purpose)
        _choice_field(self, "splits").choices = [
            (value, f"{label} ({counts.get(value, 0)} ready)") for value, label in Split.echoeval_choices()
        ]
        self.fields["splits"].initial = (
            [split for split in self.default_splits if counts.get(split, 0)]
            or [split for split in self.fallback_splits if counts.get(split, 0)][:1]
            or list(self.default_splits)
        )
        # What to train and on what first, the device last.
        first = [key for key in ("start_from", "source", "splits", "checkpoint_name") if key in self.fields]
        rest = [name for name in self.fields if name not in first and name != "device"]
        self.order_fields([*first, *rest, "device"])

    def chosen_splits(self) -> list[str]:
        """Return the chosen splits."""
        return list(self.cleaned_data["splits"])


class _TrainingForm(BuildSource, _JobForm):
    checkpoint_name = forms.CharField(
        max_length=200, required=False, help_text="Blank: named after the job, e.g. sft-job12"
    )

    def clean_checkpoint_name(self) -> str:
        name: str = self.cleaned_data["checkpoint_name"].strip()
        if name and Checkpoint.objects.filter(name=name).exists():
            raise forms.ValidationError("A checkpoint already has this name.")
        return name


def _lora_parameters(rank: int) -> dict[str, int]:
    """Return the job's LoRA settings at ``rank`` (alpha scaled as in ``LoraSettings``'s defaults)."""
    return {"rank": rank, "alpha": LoraSettings.for_rank(rank).alpha}


def _ablation_field(presets: dict[str, str]) -> forms.ChoiceField:
    return forms.ChoiceField(
        choices=list(presets.items()),
        initial=NO_ABLATION,
        required=False,
        label="Paper variant",
        help_text="An ablation of section 5.3; it overrides the fields it sets, and the checkpoint records it",
    )


def _start_field(help_text: str) -> forms.ChoiceField:
    return forms.ChoiceField(label="Start from", help_text=help_text)


class SftJobForm(_TrainingForm):
    purpose = DatasetSnapshot.Purpose.SFT

    start_from = _start_field("Retrain from the base model, or continue an earlier checkpoint.")
    epochs = forms.IntegerField(min_value=1, initial=SFT_DEFAULTS.epochs)
    max_steps = forms.IntegerField(min_value=1, required=False, help_text="Blank: as many as the epochs take")
    learning_rate = forms.FloatField(min_value=1e-12, initial=SFT_DEFAULTS.learning_rate)
    batch_size = forms.IntegerField(min_value=1, initial=SFT_DEFAULTS.batch_size)
    gradient_accumulation_steps = forms.IntegerField(
        min_value=1, initial=SFT_DEFAULTS.gradient_accumulation_steps
    )
    lambda_aaa = forms.FloatField(
        min_value=0.0, initial=SFT_DEFAULTS.lambda_aaa, label="lambda AAA", help_text="0 turns AAA off"
    )
    aaa_layers = forms.CharField(required=False, label="AAA layers", help_text="e.g. -1,-2; blank: all")
    aaa_objective = forms.ChoiceField(
        choices=list(AAA_OBJECTIVE_LABELS.items()),
        initial=SFT_DEFAULTS.aaa_objective,
        required=False,  # a script that names none gets the default (SftConfig's), as before
        label="AAA objective",
    )
    aaa_target_ratio = forms.FloatField(min_value=1.01, initial=SFT_DEFAULTS.aaa_target_ratio, required=False)
    lora_rank = forms.IntegerField(
        min_value=0, initial=0, label="LoRA rank", help_text="0 (SftConfig's default) trains every weight"
    )
    gradient_checkpointing = forms.BooleanField(required=False)
    ablation = _ablation_field(SFT_ABLATIONS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice_field(self, "start_from").choices = start_model_choices()
        self.fields["start_from"].initial = base_model_choice()[0]

    def clean_aaa_layers(self) -> list[int] | None:
        text: str = self.cleaned_data["aaa_layers"]
        try:
            layers = [int(part) for part in text.replace(" ", "").split(",") if part]
        except ValueError:
            raise forms.ValidationError("Whole numbers separated by commas, e.g. -1,-2.") from None
        return layers or None

    def job_parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        rank = data["lora_rank"]
        return {
            "start_from": data["start_from"],
            "checkpoint_name": data["checkpoint_name"],
            "config": {
                "epochs": data["epochs"],
                "max_steps": data["max_steps"],
                "learning_rate": data["learning_rate"],
                "batch_size": data["batch_size"],
                "gradient_accumulation_steps": data["gradient_accumulation_steps"],
                "lambda_aaa": data["lambda_aaa"],
                "aaa_objective": data["aaa_objective"] or SFT_DEFAULTS.aaa_objective,
                "aaa_target_ratio": data["aaa_target_ratio"] or SFT_DEFAULTS.aaa_target_ratio,
                "aaa_layers": data["aaa_layers"],
                # SFT's LoRA trains the audio encoder too, as full SFT does (``SFT_LORA``).
                "lora": {**_lora_parameters(rank), "train_audio_encoder": True} if rank else None,
                "gradient_checkpointing": data["gradient_checkpointing"],
                "device": data["device"],
                "dtype": "auto",
                "ablation": data["ablation"] or NO_ABLATION,
            },
        }


class RlJobForm(_TrainingForm):
    purpose = DatasetSnapshot.Purpose.RL

    start_from = _start_field("The policy: by default the newest SFT checkpoint.")
    mode = forms.ChoiceField(
        choices=[(mode, _ADVANTAGE_MODE_LABELS[mode]) for mode in ADVANTAGE_MODES],
        initial=RL_DEFAULTS.mode,
    )
    group_size = forms.IntegerField(
        min_value=2, initial=RL_DEFAULTS.group_size, label="Rollouts per prompt (G)"
    )
    kl_coef = forms.FloatField(min_value=0.0, initial=RL_DEFAULTS.kl_coef, label="KL coefficient")
    learning_rate = forms.FloatField(min_value=1e-12, initial=RL_DEFAULTS.learning_rate)
    epochs = forms.IntegerField(min_value=1, initial=RL_DEFAULTS.epochs)
    max_steps = forms.IntegerField(min_value=1, required=False, help_text="Blank: as many as the epochs take")
    prompts_per_step = forms.IntegerField(min_value=1, initial=RL_DEFAULTS.prompts_per_step)
    max_new_tokens = forms.IntegerField(min_value=1, initial=RL_DEFAULTS.max_new_tokens)
    temperature = forms.FloatField(min_value=1e-6, initial=RL_DEFAULTS.temperature)
    lora_rank = forms.IntegerField(min_value=1, initial=RL_LORA_DEFAULTS.rank, label="LoRA rank")
    tau = forms.FloatField(
        min_value=0.0, max_value=1.0, initial=RL_DEFAULTS.sdca.tau, help_text="Gate threshold on s1 and s2"
    )
    reward_checkpoint = forms.ModelChoiceField(
        queryset=Checkpoint.objects.none(),
        required=False,
        label="Reward model",
        empty_label="None: heuristic response reward (word overlap with the reference response)",
    )
    judge_config = forms.ModelChoiceField(
        # The offline heuristic judge is left out: "None" below is RL's own heuristic already.
        queryset=JudgeConfig.objects.filter(offline_heuristic=False),
        required=False,
        label="Judge for s1-s3",
        empty_label="None: heuristic stage scores (word overlap with gold)",
    )
    ablation = _ablation_field(RL_ABLATIONS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice_field(self, "start_from").choices = start_model_choices()
        self.fields["start_from"].initial = latest_start(Checkpoint.Kind.SFT)
        rewards = Checkpoint.objects.filter(kind=Checkpoint.Kind.REWARD)
        reward_field: Any = self.fields["reward_checkpoint"]
        reward_field.queryset = rewards
        reward_field.initial = rewards.first()
        judges = [config for config in JudgeConfig.objects.all() if config.effective_base_url]
        self.fields["judge_config"].initial = judges[0] if judges else None

    def job_parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "start_from": data["start_from"],
            "checkpoint_name": data["checkpoint_name"],
            "reward_checkpoint": data["reward_checkpoint"].pk if data["reward_checkpoint"] else None,
            "judge_config": data["judge_config"].pk if data["judge_config"] else None,
            "config": {
                "mode": data["mode"],
                "group_size": data["group_size"],
                "kl_coef": data["kl_coef"],
                "learning_rate": data["learning_rate"],
                "epochs": data["epochs"],
                "max_steps": data["max_steps"],
                "prompts_per_step": data["prompts_per_step"],
                "max_new_tokens": data["max_new_tokens"],
                "temperature": data["temperature"],
                "lora": _lora_parameters(data["lora_rank"]),
                "sdca": {"tau": data["tau"]},
                "device": data["device"],
                "dtype": "auto",
                "ablation": data["ablation"] or NO_ABLATION,
            },
        }


class RewardTrainingJobForm(_TrainingForm):
    purpose = DatasetSnapshot.Purpose.REWARD

    epochs = forms.IntegerField(
        min_value=1, initial=REWARD_DEFAULTS.epochs, help_text="Appendix D.2 trains for 2 epochs"
    )
    max_steps = forms.IntegerField(min_value=1, required=False, help_text="Blank: as many as the epochs take")
    batch_size = forms.IntegerField(min_value=1, initial=REWARD_DEFAULTS.batch_size)
    learning_rate = forms.FloatField(min_value=1e-12, initial=REWARD_DEFAULTS.learning_rate)
    backbone = forms.CharField(
        max_length=500,
        required=False,
        initial=RewardModelConfig.backbone,
        help_text="A Qwen2.5-Omni checkpoint (model folder or s3:// URI, e.g. Qwen2.5-Omni-3B as in "
        "appendix D.2), or 'tiny' for a small random one (the demo); every weight is trained",
    )

    def job_parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "checkpoint_name": data["checkpoint_name"],
            "config": {
                "epochs": data["epochs"],
                "max_steps": data["max_steps"],
                "batch_size": data["batch_size"],
                "learning_rate": data["learning_rate"],
                "device": data["device"],
                "dtype": "auto",
            },
            "model_config": {"backbone": data["backbone"].strip() or RewardModelConfig.backbone},
        }


class InferenceJobForm(_JobForm):
    purpose = DatasetSnapshot.Purpose.INFERENCE
    default_splits = (Split.TEST,)

    start_from = _start_field("By default the newest RL checkpoint, else the newest SFT one.")
    benchmark_version = forms.CharField(max_length=64, initial=DEFAULT_BENCHMARK_VERSION)
    system_name = forms.CharField(
        max_length=120, required=False, help_text="Blank: 'EchoChat' and the checkpoint's name"
    )
    max_new_tokens = forms.IntegerField(min_value=1, initial=INFERENCE_MAX_NEW_TOKENS)
    batch_size = forms.IntegerField(min_value=1, initial=INFERENCE_BATCH_SIZE)
    dialogue_history = forms.ChoiceField(choices=INFERENCE_TURN_CHOICES, required=False, label="Answer")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice_field(self, "start_from").choices = start_model_choices()
        self.fields["start_from"].initial = latest_start(Checkpoint.Kind.RL, Checkpoint.Kind.SFT)

    def clean(self) -> dict[str, Any]:
        return name_the_system(self, super().clean() or {})

    def job_parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "start_from": data["start_from"],
            "system_name": data["system_name"],
            "benchmark_version": data["benchmark_version"],
            "max_new_tokens": data["max_new_tokens"],
            "batch_size": data["batch_size"],
            "dialogue_history": data.get("dialogue_history") or "",
            "device": data["device"],
            "dtype": "auto",
        }


class EndpointInferenceJobForm(_JobForm):
    """Inference at an OpenAI-compatible chat endpoint that takes audio (``ml.jobs.endpoint_inference``)."""

    purpose = DatasetSnapshot.Purpose.INFERENCE
    default_splits = (Split.TEST,)

    device = None  # type: ignore[assignment]  # the endpoint answers on its own GPUs; any worker runs the job
    endpoint_url = forms.URLField(
        max_length=500,
        assume_scheme="https",
        label="Endpoint base URL",
        help_text="OpenAI-compatible, e.g. http://gpu-box:8000/v1 (vLLM) or https://api.openai.com/v1",
    )
    model = forms.CharField(
        max_length=200, help_text="The model name the endpoint serves (vLLM: --served-model-name)"
    )
    key_variable = forms.CharField(
        max_length=100,
        required=False,
        label="API key variable",
        help_text=f"Blank for none, else the {JUDGE_KEY_ENV_PREFIX}* variable holding it (bound to this host "
        "by ECHOSTUDIO_OUTBOUND_KEY_HOSTS)",
    )
    system_name = forms.CharField(max_length=120)
    system_category = forms.ChoiceField(choices=System.Category.choices, initial=System.Category.OURS)
    benchmark_version = forms.CharField(max_length=64, initial=DEFAULT_BENCHMARK_VERSION)
    dialogue_history = forms.ChoiceField(choices=INFERENCE_TURN_CHOICES, required=False, label="Answer")
    max_concurrency = forms.IntegerField(min_value=1, max_value=256, initial=8, label="Requests in flight")
    max_tokens = forms.IntegerField(min_value=1, initial=INFERENCE_MAX_NEW_TOKENS)
    temperature = forms.FloatField(min_value=0.0, max_value=2.0, initial=0.0)
    system_prompt = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Blank: the server's chat template decides",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        url, variable = data.get("endpoint_url") or "", (data.get("key_variable") or "").strip()
        if url and (problem := outbound_url_problem(url)) is not None:
            self.add_error("endpoint_url", problem)
        elif url and variable:
            problem = key_variable_problem(variable) or named_key_problem(url, variable)
            if problem is not None:
                self.add_error("key_variable", problem)
        name, category = data.get("system_name"), data.get("system_category")
        if name and System.objects.filter(name=name).exclude(category=category).exists():
            self.add_error("system_name", "A system of another category has this name; choose another.")
        return data

    def job_parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "endpoint_url": data["endpoint_url"],
            "model": data["model"],
            "key_variable": (data.get("key_variable") or "").strip(),
            "system_name": data["system_name"],
            "system_category": data["system_category"],
            "benchmark_version": data["benchmark_version"],
            "dialogue_history": data.get("dialogue_history") or "",
            "max_concurrency": data["max_concurrency"],
            "max_tokens": data["max_tokens"],
            "temperature": data["temperature"],
            "system_prompt": data.get("system_prompt") or "",
        }


class RewardScoringJobForm(forms.Form):
    reward_checkpoint = forms.ModelChoiceField(queryset=Checkpoint.objects.none(), label="Reward model")
    system = forms.ModelChoiceField(queryset=System.objects.all())
    benchmark_version = forms.CharField(max_length=64, initial=DEFAULT_BENCHMARK_VERSION)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rewards = Checkpoint.objects.filter(kind=Checkpoint.Kind.REWARD)
        reward_field: Any = self.fields["reward_checkpoint"]
        reward_field.queryset = rewards
        reward_field.initial = rewards.first()

    def chosen_splits(self) -> list[str] | None:
        """Return None: reward scoring reads a system's outputs, not a dataset snapshot."""
        return None

    def job_parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "reward_checkpoint": data["reward_checkpoint"].pk,
            "system": data["system"].pk,
            "benchmark_version": data["benchmark_version"],
        }
