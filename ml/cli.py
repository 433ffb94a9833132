"""Train EchoChat outside the web app, on one GPU or many: SFT with AAA, RL with SDCA.

Input is a dataset export of the web app (``manage.py export_training_data``: records.jsonl,
the user audio, manifest.json); output is a checkpoint directory or ``s3://`` prefix in the
layout of ``ml.core.checkpoints``, which ``manage.py register_checkpoint`` makes usable in the app.
No Django is imported. Examples::

    python -m ml.cli sft --data export/records.jsonl --model s3://models/qwen2-audio --output ckpt/sft-1
    torchrun --nproc_per_node 8 -m ml.cli sft --data export/records.jsonl --model /models/base --output ckpt/sft-1
    accelerate launch --num_processes 8 -m ml.cli rl --data export/records.jsonl --model ckpt/sft-1 \\
        --output ckpt/rl-1 --reward-model ckpt/reward-1 --judge-url http://vllm:8000/v1 --judge-model judge

With several processes, SFT splits each step's global batch (``--batch-size`` per process x
gradient accumulation x processes) among the ranks and is the same training as one process on
that batch (``ml.core.sft``); RL trains every rank on an equal shard, averages gradients before
clipping and reduces its metrics over the ranks (``ml.core.rl``). Rank 0 prints the metrics and
saves the checkpoint.
``--model tiny`` builds a random tiny model, for a smoke test on any machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch.distributed as dist

from ml.core.ablations import NO_ABLATION, RL_ABLATIONS, SFT_ABLATIONS, with_ablation
from ml.core.config import AAA_OBJECTIVES, ADVANTAGE_MODES, LoraSettings, RlConfig, SftConfig
from ml.core.runtime import (
    Ranks,
    StartModel,
    init_ranks,
    load_start_model,
    resolve_device,
    resolve_dtype,
    save_trained_model,
    shard_evenly,
)
from ml.core.training_records import MANIFEST_FILE, RecordAudio, read_records


def _layers(text: str) -> tuple[int, ...] | None:
    return tuple(int(part) for part in text.split(",") if part.strip()) or None


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``python -m ml.cli``."""
    parser = argparse.ArgumentParser(prog="python -m ml.cli", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    # Defaults are the config dataclasses': SFT trains every weight, the audio encoder included
    # (rank 0), as the paper does; RL uses LoRA at its default rank.
    sft, rl = SftConfig(), RlConfig()
    lora_ranks = {"sft": sft.lora.rank if sft.lora else 0, "rl": (rl.lora or LoraSettings()).rank}
    for name, help_text in (("sft", "supervised fine-tuning with AAA"), ("rl", "GRPO with SDCA")):
        defaults = sft if name == "sft" else rl
        command = commands.add_parser(name, help=help_text)
        command.add_argument("--data", required=True, type=Path, help="records.jsonl of a dataset export")
        command.add_argument(
            "--model", required=True, help="base model or checkpoint: path, s3:// URI or 'tiny'"
        )
        command.add_argument("--output", required=True, help="checkpoint directory or s3:// prefix")
        command.add_argument("--epochs", type=int, default=defaults.epochs)
        command.add_argument("--max-steps", type=int, default=None)
        command.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
        command.add_argument(
            "--lora-rank",
            type=int,
            default=lora_ranks[name],
            help="0: train every weight, no LoRA (RL then keeps a frozen copy as its reference)",
        )
        command.add_argument("--gradient-checkpointing", action="store_true")
        command.add_argument("--device", default="auto", help="auto: this rank's GPU, else the CPU")
        command.add_argument("--dtype", default="auto", help="auto: bfloat16 on GPUs, float32 on CPUs")
        command.add_argument("--seed", type=int, default=defaults.seed)
        presets = SFT_ABLATIONS if name == "sft" else RL_ABLATIONS
        command.add_argument(
            "--ablation",
            choices=list(presets),
            default=NO_ABLATION,
            help="a paper variant; it overrides the options it sets: "
            + "; ".join(f"{key}: {label}" for key, label in presets.items()),
        )
        if name == "sft":
            command.add_argument(
                "--batch-size", type=int, default=sft.batch_size, help="examples per micro-batch per process"
            )
            command.add_argument(
                "--gradient-accumulation-steps", type=int, default=sft.gradient_accumulation_steps
            )
            command.add_argument("--lambda-aaa", type=float, default=sft.lambda_aaa)
            command.add_argument(
                "--aaa-objective",
                choices=AAA_OBJECTIVES,
                default=sft.aaa_objective,
                help="target: hinge at --aaa-target-ratio x the starting rho; linear: 1 - rho; log: -log rho",
            )
            command.add_argument("--aaa-target-ratio", type=float, default=sft.aaa_target_ratio)
            command.add_argument("--aaa-layers", type=_layers, default=None, help="e.g. -1,-2 (default: all)")
        else:
            command.add_argument("--mode", choices=ADVANTAGE_MODES, default=rl.mode)
            command.add_argument("--group-size", type=int, default=rl.group_size)
            command.add_argument("--kl-coef", type=float, default=rl.kl_coef)
            command.add_argument("--prompts-per-step", type=int, default=rl.prompts_per_step)
            command.add_argument("--max-new-tokens", type=int, default=rl.max_new_tokens)
            command.add_argument("--temperature", type=float, default=rl.temperature)
            command.add_argument(
                "--reward-model", default=None, help="reward checkpoint (default: heuristic)"
            )
            command.add_argument(
                "--judge-url", default=None, help="OpenAI-compatible judge (default: heuristic)"
            )
            command.add_argument("--judge-model", default="gpt-4o")
            command.add_argument("--judge-api-key-env", default="ECHOSTUDIO_JUDGE_API_KEY")
            command.add_argument(
                "--tts-url",
                default=None,
                help="OpenAI-compatible /v1/audio/speech server the reward model hears rollouts through "
                "(default: eSpeak NG)",
            )
            command.add_argument("--tts-model", default="tts-1")
            command.add_argument("--tts-voice", default="alloy")
            command.add_argument("--tts-api-key-env", default="ECHOSTUDIO_TTS_API_KEY")
    return parser


def dataset_id(records_file: Path) -> str:
    """Return the export's snapshot id from manifest.json, else a hash of the records."""
    manifest = records_file.parent / MANIFEST_FILE
    if manifest.is_file():
        return str(json.loads(manifest.read_text())["snapshot"])
    return "records-sha256:" + hashlib.sha256(records_file.read_bytes()).hexdigest()[:16]


def _lora(args: argparse.Namespace) -> LoraSettings | None:
    # SFT's LoRA keeps the audio encoder trainable, as full SFT trains it (``SFT_LORA``).
    encoder = args.command == "sft"
    return LoraSettings.for_rank(args.lora_rank, train_audio_encoder=encoder) if args.lora_rank > 0 else None


def _shared_settings(args: argparse.Namespace, ranks: Ranks) -> dict[str, Any]:
    """Return the config fields both commands take from their shared options (``build_parser``)."""
    device = resolve_device(args.device, ranks.local_rank)
    return {
        "epochs": args.epochs,
        "max_steps": args.max_steps,
        "learning_rate": args.learning_rate,
        "lora": _lora(args),
        "gradient_checkpointing": args.gradient_checkpointing,
        "device": device,
        "dtype": resolve_dtype(args.dtype, device),
        "seed": args.seed,
    }


def _printer(ranks: Ranks) -> Callable[[float, str, dict[str, float]], None]:
    def report(fraction: float, message: str, metrics: dict[str, float]) -> None:
        if ranks.is_main:
            print(json.dumps({"progress": round(fraction, 4), "message": message, **metrics}), flush=True)

    return report


def run_sft(args: argparse.Namespace, rows: Sequence[RecordAudio], ranks: Ranks) -> dict[str, Any]:
    """Train with SFT + AAA on this rank's shard; rank 0 saves. Return the run's summary."""
    from ml.core.sft import train_sft
    from ml.core.training_inputs import sft_examples

    config = with_ablation(
        SftConfig(
            batch_size=args.batch_size,
            gradient_accumulation_steps=args.gradient_accumulation_steps,
            lambda_aaa=args.lambda_aaa,
            aaa_objective=args.aaa_objective,
            aaa_target_ratio=args.aaa_target_ratio,
            aaa_layers=args.aaa_layers,
            **_shared_settings(args, ranks),
        ),
        args.ablation,
    )
    # Records without a reference response have no target. Every rank gets them all: train_sft
    # splits each step's global batch among the ranks, so the run is the one-process run.
    with_targets = [row for row in rows if row.record.target is not None]
    start = load_start_model(args.model, config.device, config.dtype)
    result = train_sft(
        start.speech_lm,
        sft_examples(with_targets),
        config,
        _printer(ranks),
        ranks=ranks,
        aaa_target=start.aaa_target,
    )
    return _save(args, start, config.to_dict(), result.last_metrics(), result.steps_completed, ranks)


def run_rl(args: argparse.Namespace, rows: Sequence[RecordAudio], ranks: Ranks) -> dict[str, Any]:
    """Train with GRPO + SDCA on this rank's shard; rank 0 saves. Return the run's summary."""
    from annotation.audio.tts import TtsSettings, speak_in_style
    from ml.core.judge_scoring import JudgeStageScorer
    from ml.core.reward.checkpoint import load_reward_model
    from ml.core.training_inputs import judge_golds, train_rl_on_records
    from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient

    config = with_ablation(
        RlConfig(
            mode=args.mode,
            group_size=args.group_size,
            kl_coef=args.kl_coef,
            prompts_per_step=args.prompts_per_step,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            **_shared_settings(args, ranks),
        ),
        args.ablation,
    )
    shard = shard_evenly(rows, ranks)
    reward = load_reward_model(args.reward_model, device=config.device).model if args.reward_model else None
    judge = None
    if args.judge_url:
        client = JudgeClient(
            ChatJudgeConfig(
                base_url=args.judge_url,
                model=args.judge_model,
                api_key=os.environ.get(args.judge_api_key_env, ""),
            )
        )
        judge = JudgeStageScorer(client, judge_golds(shard))
    tts = TtsSettings(
        backend="openai" if args.tts_url else "espeak",
        base_url=args.tts_url or "",
        model=args.tts_model,
        voice=args.tts_voice,
        api_key=os.environ.get(args.tts_api_key_env, ""),
    )
    start = load_start_model(args.model, config.device, config.dtype, for_rl=True)
    result = train_rl_on_records(
        start.speech_lm,
        shard,
        config,
        judge,
        reward,
        _printer(ranks),
        synthesize=partial(speak_in_style, settings=tts),
        ranks=ranks,
    )
    return _save(args, start, config.to_dict(), result.last_metrics(), result.steps_completed, ranks)


def _save(
    args: argparse.Namespace,
    start: StartModel,
    config: dict[str, Any],
    metrics: dict[str, float],
    steps: int,
    ranks: Ranks,
) -> dict[str, Any]:
    summary: dict[str, Any] = {"steps": steps, "metrics": metrics, "output": args.output}
    if ranks.is_main:
        saved = save_trained_model(
            start,
            args.output,
            config=config,
            dataset_snapshot_ids=[dataset_id(args.data)],
            metrics={"steps": steps, **metrics},
            extra={"stage": args.command, "world_size": ranks.world_size},
        )
        summary["weights"] = sorted(saved.metadata.weight_sha256)
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = build_parser().parse_args(argv)
    ranks = init_ranks()
    rows = read_records(args.data)
    run = run_sft if args.command == "sft" else run_rl
    summary = run(args, rows, ranks)
    if ranks.is_main:
        print(json.dumps({"done": True, **summary}), flush=True)
    if ranks.world_size > 1:
        # Other ranks must not exit while rank 0 is still saving. Then every rank leaves at once:
        # tearing down Gloo's threads at interpreter exit can abort a finished rank ("terminate
        # called without an active exception", SIGABRT, seen once in CI), which fails the whole
        # torchrun although the checkpoint is saved. The process's end frees the group.
        dist.barrier()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
