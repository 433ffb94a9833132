"""What a single-turn study can rate: a `Sample`, one system's answer to one item. By default the
samples are the systems' benchmark outputs (`usable_outputs`); another workflow may hand its own
to `creation.create_study` (EchoMind's spoken replies to deliveries,
`evaluation.echomind.replies.listening`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Q

from annotation.recording.consent.models import RESEARCH_EVALUATION
from annotation.recording.models import Item, Take
from evaluation.outputs.models import ModelOutput, System


@dataclass(frozen=True)
class Sample:
    """One system's answer to one item: the item (its recording is the query raters hear), the
    answer's words and audio, the stratum it is sampled in, a stable order among samples (training
    samples are drawn in it), and `output` when it is a benchmark output."""

    item: Item
    system_id: int
    text: str
    audio_key: str
    stratum: str
    order: int
    output: ModelOutput | None = None


# item -> system -> the system's sample for that item
Samples = Mapping[int, Mapping[int, Sample]]


def output_sample(output: ModelOutput) -> Sample:
    """Return a benchmark output as a sample, stratified by its item's scenario."""
    return Sample(
        item=output.item,
        system_id=output.system_id,
        text=output.response_text or output.raw_text,
        audio_key=output.response_audio_key,
        stratum=output.item.scenario,
        order=output.pk,
        output=output,
    )


def usable_outputs(
    systems: Sequence[System], benchmark_version: str, *, rates_audio: bool, rates_content: bool
) -> dict[int, dict[int, Sample]]:
    """Return item -> system -> output, for outputs a rater can judge on every chosen dimension."""
    outputs = (
        ModelOutput.objects.for_version(benchmark_version)
        .filter(system__in=systems, item__recording__isnull=False, item__dialogue__isnull=True)
        .filter(item__recording__in=Take.objects.consented_for(RESEARCH_EVALUATION).values("pk"))
        .select_related("item__recording")
    )
    if rates_audio:
        outputs = outputs.exclude(response_audio_key="")
    if rates_content:
        outputs = outputs.exclude(Q(response_text="") & Q(raw_text=""))
    answers: dict[int, dict[int, Sample]] = {}
    for output in outputs:
        answers.setdefault(output.item_id, {})[output.system_id] = output_sample(output)
    return answers
