"""Finished builds made by hand for the spot-check and build-page tests (no LLM, no worker).

Every sample has a state row per stage as the pipeline leaves them; stage counts come from the
pipeline's own ``claims.refresh_summary``, so the build page reads what a real build would show.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotation.audio.synthesis import synthesize, to_wav_bytes
from ml.builder.claims import refresh_summary
from ml.builder.models import (
    Build,
    BuildDialogue,
    BuildSample,
    BuildStage,
    BuildStatus,
    SampleStage,
    SampleStatus,
    SpotCheck,
    StageStatus,
)
from ml.builder.pages.queue import take_next
from ml.builder.stages import SAMPLE_STAGES, STAGES, TRAJECTORIES
from tests.support.listening import listen
from webapp.lib.output_format import render_output, render_strategy
from webapp.models import User
from webapp.storage import save_media

VARIANTS = ("standard", "role-play", "modality-conflict")
CONFIG: dict[str, Any] = {"endpoints": [{"base_url": "http://127.0.0.1:9/v1", "model": "writer-a"}]}


def perception(emotion: str = "sad") -> dict[str, Any]:
    return {
        "polarity": "negative",
        "emotion": emotion,
        "emotion_variant": "",
        "intensity": "medium",
        "pitch": "low",
        "energy": "low",
        "rate": "low",
        "stressed_words": [],
        "intonation": "falling",
        "prosody_caption": "low, slow and quiet",
        "situation": "missed a promotion",
        "modality_conflict": False,
        "conflict_kind": "",
        "emotion_segments": [],
    }


TOM = {
    "context": "passed over at work",
    "latent_need": "to feel valued",
    "core_demand": "comfort",
    "recommended_strategies": ["emotional-validation"],
    "not_recommended_strategies": [],
    "constraints": [],
}


# A well-formed output, as the response filter lets through, so these builds export.
OUTPUT = render_output(
    "Emotion: sad; the voice is low and slow.",
    "Context: passed over at work. Latent need: to feel valued.",
    render_strategy(["Emotional validation"], "comforting"),
    "That sounds really hard.",
)


def make_stages(build: Build) -> None:
    for stage in STAGES:
        BuildStage.objects.create(build=build, stage=stage, status=StageStatus.DONE, version=f"{stage}-1")


def add_sample(
    build: Build,
    number: int,
    *,
    variant: str = "standard",
    dialogue: BuildDialogue | None = None,
    turn: int = 0,
    dropped_at: str = "",
    reason: str = "",
    audio: bool = False,
) -> BuildSample:
    """Add a sample that went through every stage, or was dropped at `dropped_at` with `reason`."""
    text = f"I really thought I would get the promotion this time, number {number}."
    sample = BuildSample.objects.create(
        build=build,
        external_id=f"S-{number}" if dialogue is None else f"{dialogue.external_id}.t{turn}",
        dialogue=dialogue,
        turn=turn,
        emotion="sad",
        intensity="medium",
        prompt_variant=variant,
        text=text,
        perception=perception(),
        tom=dict(TOM),
        strategies=["emotional-validation"],
        speech_style="comforting",
        output=OUTPUT,
        response="That sounds really hard.",
        status=SampleStatus.DROPPED if dropped_at else SampleStatus.ACTIVE,
        dropped_at=dropped_at,
        drop_reason=reason,
    )
    if audio:
        speech = synthesize(text)
        sample.user_audio_key = save_media(
            f"builder/{sample.pk}.wav", to_wav_bytes(speech.samples, speech.sample_rate)
        )
    if not dropped_at:
        # Without voiced audio, a tenth of a second of silence: checkers must be able to play it.
        sample.response_audio_key = sample.user_audio_key or save_media(
            f"builder/response-{sample.pk}.wav", to_wav_bytes(np.zeros(1600, dtype=np.int16), 16000)
        )
    sample.save()
    for stage in SAMPLE_STAGES:
        if stage == TRAJECTORIES and dialogue is None:
            continue
        dropped_here = stage == dropped_at
        SampleStage.objects.create(
            build=build,
            sample=sample,
            stage=stage,
            head=turn <= 1,
            status="done",
            outcome="dropped" if dropped_here else "kept",
            reason=reason if dropped_here else "",
            llm_calls=1,
            prompt_tokens=100,
            completion_tokens=40,
            seconds=0.5,
        )
        if dropped_here:
            break
    return sample


def finished_build(
    name: str = "EchoDialogue test build",
    single: int = 12,
    dialogues: int = 0,
    drops: dict[str, list[str]] | None = None,
    audio: bool = False,
    turns: int = 3,
) -> Build:
    """Return a finished build: `single` kept samples spread over three prompt variants,
    `dialogues` kept dialogues of `turns` turns, and dropped samples {stage: [reason, ...]}."""
    build = Build.objects.create(
        name=name, status=BuildStatus.SUCCEEDED, single_turn_count=single, seed=11, config=dict(CONFIG)
    )
    make_stages(build)
    number = 0
    for index in range(single):
        number += 1
        add_sample(build, number, variant=VARIANTS[index % len(VARIANTS)], audio=audio)
    for index in range(dialogues):
        dialogue = BuildDialogue.objects.create(
            build=build, external_id=f"D-{index + 1}", prompt_variant="standard"
        )
        for turn in range(1, turns + 1):
            number += 1
            add_sample(build, number, dialogue=dialogue, turn=turn, audio=audio)
    for stage, reasons in (drops or {}).items():
        for reason in reasons:
            number += 1
            add_sample(build, number, dropped_at=stage, reason=reason)
    for row in BuildStage.objects.filter(build=build).exclude(stage="plan"):
        refresh_summary(row)
    return build


def taken(user: User, build: Build | None = None, *, played: bool = True) -> SpotCheck:
    """Return the next spot-check the user takes from the queue (there must be one), its audio
    played to the end through the real audio links unless `played` is False."""
    check = take_next(user, build)
    assert check is not None, "the queue is empty"
    if played:
        listen(user, check.sample.user_audio_key, check.sample.response_audio_key)
    return check
