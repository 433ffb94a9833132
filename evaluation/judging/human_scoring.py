"""The judge rubrics applied by hand: blind samples of outputs, and evaluators' stage scores.

Evaluators see an output only by its random public id, with the item, its gold reference and the
output's text and audio; never the system's name, code or version. Their scores go through the
same `score_stage` (caps included) and the same automatic flags as the LLM judges', so the
judge-human agreement (Table 3) compares like with like.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction

from annotation.gold.models import GoldReference
from evaluation.judging.models import HumanJudgement, RubricSample, RubricSampleEntry
from evaluation.judging.rubrics import RESPONSE_AUDIO, automatic_flags, score_stage
from evaluation.judging.stages import applicable_stages, stage_input
from evaluation.outputs.access import systems_named_in
from evaluation.outputs.models import ModelOutput, System
from webapp.listening import listening_refusal
from webapp.models import User


class SampleError(ValueError):
    """A rubric sample cannot be drawn as asked."""


@dataclass(frozen=True)
class HandScore:
    subscores: dict[str, int]
    flags: list[str]


def output_stages(output: ModelOutput) -> tuple[str, ...]:
    """Return the rubric stages an evaluator scores for this output (as the judges do)."""
    return applicable_stages(output.item.scenario, output.system.text_only)


def draw_rubric_sample(
    *,
    name: str,
    benchmark_version: str,
    n_items: int,
    evaluators: Iterable[User],
    systems: Sequence[System] | None = None,
    seed: int | None = None,
    created_by: User | None = None,
) -> RubricSample:
    """Create a sample: n random gold items, every chosen system's output for each, in shuffled order."""
    outputs = ModelOutput.objects.for_version(benchmark_version).filter(
        GoldReference.objects.current_exists()
    )
    if systems:
        outputs = outputs.filter(system__in=systems)
    by_item: dict[int, list[int]] = {}
    for output_id, item_id in outputs.values_list("pk", "item_id").order_by("item_id", "pk"):
        by_item.setdefault(item_id, []).append(output_id)
    if not by_item:
        raise SampleError("No output of these systems has an item with a gold reference.")
    # Evaluators see the sample's name in their queue: like a study's title, it may not name (or
    # give the anonymous code of) any system whose outputs it could hold.
    named = systems_named_in(name, System.objects.filter(pk__in=outputs.values("system_id")))
    if named:
        raise SampleError(
            f"The name names {', '.join(named)}: evaluators must not learn which systems they score."
        )
    rng = random.Random(seed)
    chosen = rng.sample(sorted(by_item), min(n_items, len(by_item)))
    output_ids = [output_id for item_id in chosen for output_id in by_item[item_id]]
    # Shuffled so that one system's outputs do not come in a run an evaluator could recognise.
    rng.shuffle(output_ids)
    # One transaction: an evaluator invited to a sample must never open it before its entries exist.
    with transaction.atomic():
        sample = RubricSample.objects.create(
            name=name, benchmark_version=benchmark_version, created_by=created_by
        )
        sample.evaluators.set(list(evaluators))
        RubricSampleEntry.objects.bulk_create(
            RubricSampleEntry(sample=sample, output_id=output_id, position=position)
            for position, output_id in enumerate(output_ids)
        )
    return sample


def save_hand_scores(
    evaluator: User, output: ModelOutput, scores: Mapping[str, HandScore], comment: str
) -> list[HumanJudgement]:
    """Score every stage of an output by hand (replacing the evaluator's earlier scores of it).

    Raises RubricError for a sub-score outside the rubric, and SampleError for an audio score by
    an evaluator the server has not sent the whole response audio to, long enough ago to have
    heard it (`webapp.listening`, the rule of reviews and studies); nothing is saved then.
    """
    gold = GoldReference.objects.current_of(output.item_id)
    if gold is None:
        raise SampleError("This item has no gold reference any more.")
    stages = output_stages(output)
    if set(scores) != set(stages):
        raise SampleError(f"expected scores for {', '.join(stages)}")
    if RESPONSE_AUDIO in stages:
        refusal = listening_refusal(evaluator.pk, output.response_audio_key, "the whole spoken response")
        if refusal is not None:
            raise SampleError(f"{refusal} The audio score needs it.")
    saved = []
    with transaction.atomic():
        for stage in stages:
            given = scores[stage]
            inputs = stage_input(output, gold, stage)
            auto = sorted(automatic_flags(stage, inputs.flag_input, gold.tom))
            result = score_stage(stage, given.subscores, [*given.flags, *auto], scenario=output.item.scenario)
            # update_or_create under the unique constraint: a double submit updates, never duplicates.
            judgement, _ = HumanJudgement.objects.update_or_create(
                output=output,
                stage=stage,
                evaluator=evaluator,
                defaults={
                    "subscores": given.subscores,
                    "flags": sorted(given.flags),
                    "auto_flags": auto,
                    "raw_sum": result.raw_sum,
                    "cap": result.cap,
                    "cap_reasons": list(result.cap_reasons),
                    "score": result.final,
                    "comment": comment,
                },
            )
            saved.append(judgement)
    return saved
