"""GPU smoke check: every training stage and inference, on tiny models, with CUDA and bf16 autocast.

    python bench/gpu_smoke.py                  # on a CUDA machine (exits 2 when there is none)
    python bench/gpu_smoke.py --device cpu     # the same steps on the CPU (what CI can run)

Four steps, each printed as ``PASS <step> (<seconds> s): <what it saw>`` or ``FAIL <step>: <why>``:

- ``sft_aaa``: full-parameter SFT with AAA (target objective) for a few steps in bf16
  (``ml.core.precision``: fp32 master weights, bf16 autocast); losses finite, the AAA target set,
  trainable weights still fp32 and moved;
- ``rl_sdca``: one GRPO step with SDCA advantages and LoRA, stage scores from rollout length;
  finite loss and KL, the adapters fp32 and moved;
- ``reward``: reward-model training (tiny Qwen2.5-Omni thinker) in bf16; finite losses, weights moved;
- ``inference``: the SFT model saved as a checkpoint, loaded back in bf16 and asked for a reply.

The last line is ``gpu_smoke=pass`` or ``gpu_smoke=fail``; the exit status is 0 only when every
step passed. On a lent GPU it takes well under a minute after the imports.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

# Run as a script from anywhere: make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch

from ml.core.checkpoints import load_checkpoint, save_checkpoint
from ml.core.config import LoraSettings, RewardModelConfig, RewardTrainingConfig, RlConfig, SftConfig
from ml.core.inference import InferenceItem, run_inference
from ml.core.reward.ladder import RewardExample
from ml.core.reward.model import RewardInput, build_reward_model
from ml.core.reward.training import train_reward_model
from ml.core.rl.rollouts import StageScores
from ml.core.rl.training import train_rl
from ml.core.sft import SftExample, train_sft
from ml.core.speech.inputs import SAMPLE_RATE
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import build_tiny_speech_lm
from webapp.lib.output_format import ParsedOutput, render_output, render_reasoning, render_strategy

PERCEPTION = "Low pitch, slow rate and a trembling voice: sad, strong intensity."
RESPONSE = "That sounds really hard. I am here with you."
TARGET = render_output(
    perception=PERCEPTION,
    reasoning=render_reasoning(
        context="The user lost their job last week.",
        latent_need="Reassurance that they are not a failure.",
        core_demand="To be heard without judgement.",
        constraints="Avoid quick advice.",
    ),
    strategy=render_strategy(["Emotional validation", "Reassurance"], "comforting"),
    response=RESPONSE,
)
PROMPT = "Listen to the speaker, reason about how they feel, then respond with empathy."
DTYPE = "bfloat16"


def voiced(seconds: float, seed: int) -> np.ndarray:
    """Return a voiced signal with a falling pitch and light noise."""
    rng = np.random.default_rng(seed)
    time_axis = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    phase = 2 * np.pi * np.cumsum(160.0 * (1 - 0.2 * time_axis / seconds)) / SAMPLE_RATE
    signal = 0.3 * sum(np.sin(k * phase) / k for k in range(1, 6))
    return (signal + 0.01 * rng.standard_normal(time_axis.shape)).astype(np.float32)


def _trainable_fp32_and_moved(model: torch.nn.Module, before: dict[str, torch.Tensor]) -> str:
    named = {name: parameter for name, parameter in model.named_parameters() if parameter.requires_grad}
    wrong = [name for name, parameter in named.items() if parameter.dtype != torch.float32]
    if wrong:
        raise AssertionError(f"trainable weights not fp32: {wrong[:3]}")
    moved = sum(int((named[name].detach() != start).sum()) for name, start in before.items() if name in named)
    total = sum(start.numel() for name, start in before.items() if name in named)
    if moved == 0:
        raise AssertionError("no trainable weight moved")
    return f"{moved / total:.0%} of trainable weights moved"


def _by_length(item_id: str, parsed: ParsedOutput) -> StageScores:
    # Text sampled from a random model is never well formed; its length still ranks the rollouts,
    # so every span gets a non-zero advantage (a judge or reward model is not what is checked here).
    length = len(parsed.text)
    return StageScores(length % 5 / 4, length % 3 / 2, length % 2, 5.0 * (length % 7) / 6, 0.5)


def _finite(values: list[float], what: str) -> None:
    if not values or not all(math.isfinite(value) for value in values):
        raise AssertionError(f"{what} not finite: {values}")


class Smoke:
    def __init__(self, device: str, workdir: Path) -> None:
        self.device = device
        self.workdir = workdir
        self.sft_model: SpeechLM | None = None

    def sft_aaa(self) -> str:
        speech_lm = build_tiny_speech_lm("qwen2_audio", seed=0)
        examples = [SftExample(voiced(0.8, seed), SAMPLE_RATE, PROMPT, TARGET) for seed in range(4)]
        config = SftConfig(
            max_steps=4, batch_size=2, learning_rate=1e-3, lambda_aaa=0.1, device=self.device, dtype=DTYPE
        )
        before = {name: p.detach().clone().to(self.device) for name, p in speech_lm.model.named_parameters()}
        result = train_sft(speech_lm, examples, config)
        _finite([step["loss"] for step in result.history], "SFT losses")
        _finite([step["aaa_target"] for step in result.history], "AAA target")
        self.sft_model = speech_lm
        moved = _trainable_fp32_and_moved(speech_lm.model, before)
        first, last = result.history[0]["loss"], result.history[-1]["loss"]
        return f"loss {first:.3f} -> {last:.3f}, rho* {result.history[0]['aaa_target']:.3f}, {moved}"

    def rl_sdca(self) -> str:
        policy = build_tiny_speech_lm("qwen2_audio", seed=1)
        config = RlConfig(
            mode="sdca",
            group_size=4,
            max_new_tokens=12,
            max_steps=1,
            learning_rate=1e-3,
            lora=LoraSettings(rank=4, alpha=8),
            device=self.device,
            dtype=DTYPE,
        )
        prompts = [InferenceItem("item-1", voiced(0.8, 7), SAMPLE_RATE, PROMPT)]
        # LoRA is applied inside train_rl; lora_B starts at zero, so a non-zero one has moved.
        result = train_rl(policy, None, prompts, _by_length, config)
        metrics = result.last_metrics()
        _finite([metrics["loss"], metrics["kl"]], "RL loss and KL")
        adapters = {n: p for n, p in policy.model.named_parameters() if "lora_B" in n}
        if not adapters or any(p.dtype != torch.float32 for p in adapters.values()):
            raise AssertionError("LoRA adapters missing or not fp32")
        if all(int(p.detach().count_nonzero()) == 0 for p in adapters.values()):
            raise AssertionError("no adapter moved")
        return f"loss {metrics['loss']:.4f}, kl {metrics['kl']:.2e}, reward {metrics['reward_total']:.3f}"

    def reward(self) -> str:
        model = build_reward_model(
            RewardModelConfig(tiny_hidden_size=32, tiny_layers=1, tiny_audio_seconds=2), seed=5
        )
        examples = [
            RewardExample(
                f"item-{seed}",
                RewardInput(
                    voiced(0.8, seed), "sad", RESPONSE if seed % 2 else "Whatever.", voiced(0.6, seed + 9)
                ),
                4.0 if seed % 2 else 1.0,
                bool(seed % 2),
                "comforting",
            )
            for seed in range(4)
        ]
        config = RewardTrainingConfig(
            max_steps=3, batch_size=2, learning_rate=1e-3, device=self.device, dtype=DTYPE
        )
        before = {name: p.detach().clone().to(self.device) for name, p in model.named_parameters()}
        result = train_reward_model(model, examples, config)
        _finite([step["loss"] for step in result.history], "reward losses")
        moved = _trainable_fp32_and_moved(model, before)
        return f"loss {result.history[0]['loss']:.3f} -> {result.history[-1]['loss']:.3f}, {moved}"

    def inference(self) -> str:
        if self.sft_model is None:
            raise AssertionError("needs the sft_aaa step's model")
        saved = save_checkpoint(self.sft_model, self.workdir / "sft", {"smoke": True})
        loaded = load_checkpoint(saved.uri, device=self.device, dtype=DTYPE, verify=True)
        outputs = run_inference(
            loaded.speech_lm,
            [InferenceItem("item-1", voiced(0.8, 3), SAMPLE_RATE, PROMPT)],
            max_new_tokens=16,
        )
        if len(outputs) != 1 or not outputs[0].raw_text:
            raise AssertionError(f"no reply: {outputs}")
        return f"reply of {len(outputs[0].raw_text)} characters from the bf16 checkpoint"


def run(device: str) -> bool:
    """Run every step on ``device``; print pass/fail per step; return whether all passed."""
    passed = True
    with tempfile.TemporaryDirectory(prefix="gpu-smoke-") as folder:
        smoke = Smoke(device, Path(folder))
        steps: list[tuple[str, Callable[[], str]]] = [
            ("sft_aaa", smoke.sft_aaa),
            ("rl_sdca", smoke.rl_sdca),
            ("reward", smoke.reward),
            ("inference", smoke.inference),
        ]
        for name, step in steps:
            started = time.perf_counter()
            try:
                seen = step()
            except Exception as exc:
                passed = False
                print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
                traceback.print_exc(limit=4)
                continue
            print(f"PASS {name} ({time.perf_counter() - started:.1f} s): {seen}", flush=True)
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: this check is for a GPU (run with --device cpu to try the steps on the CPU)")
        return 2
    if args.device.startswith("cuda"):
        print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, {DTYPE} autocast")
    else:
        print(f"device: cpu, torch {torch.__version__}, {DTYPE} autocast")
    torch.manual_seed(0)
    passed = run(args.device)
    print(f"gpu_smoke={'pass' if passed else 'fail'}")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
