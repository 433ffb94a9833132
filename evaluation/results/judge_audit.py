"""The judge audit job: one judge configuration probed on a sample of outputs (thin Django layer).

The probes and statistics are `evaluation.judging.audit` (pure); this module picks the outputs,
builds each probe's prompts, asks the judges (`evaluation.judging.asking`: cache and outbound
policy like any judge call) and stores the figures as the job's result. A worker killed mid-audit
loses nothing that matters: the job runs again from the top and every answer already received
comes from the judge cache.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from django.db import transaction

from annotation.gold.models import GoldReference
from evaluation.judging import audit
from evaluation.judging.asking import StagePrompt, ask, judge_listens, verdict_of
from evaluation.judging.cache import DatabaseJudgeCache
from evaluation.judging.dialogues.context import histories_for
from evaluation.judging.models import HumanJudgement, JudgeConfig
from evaluation.judging.rubrics import (
    FLAG_CAPS,
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    STAGES,
    strategy_names,
)
from evaluation.judging.stages import applicable_stages, stage_input
from evaluation.outputs.models import ModelOutput
from evaluation.results.agreement import judge_human_agreement
from evaluation.results.models import JudgeAudit
from webapp.jobs import JobReporter, start_job
from webapp.lib.vocabulary import EMOTIONS
from webapp.models import User

JOB_KIND = "judge_audit"
CHUNK = 16  # prompts asked at once: a cancel is seen between chunks
WRONG_EMOTION_CAP = FLAG_CAPS[PERCEPTION]["wrong_primary_emotion"]
NOT_RECOMMENDED_CAP = FLAG_CAPS[REASONING]["recommends_not_recommended"]
# The same reply voiced two ways, for judges that listen (eSpeak NG; -12 dB is a quarter amplitude).
VOICES = ("en-us", "en-gb")
QUIET_GAIN = 0.25


class AuditRefused(Exception):
    """An audit cannot start (a judge without an endpoint, no outputs)."""


def start_judge_audit(
    judge_config: JudgeConfig,
    benchmark_version: str,
    *,
    repeats: int = 3,
    max_outputs: int = 30,
    compare_with: Sequence[JudgeConfig] = (),
    started_by: User | None = None,
) -> JudgeAudit:
    """Create an audit and enqueue its job."""
    if repeats < 2:
        raise AuditRefused("Self-consistency needs each prompt judged at least twice (repeats >= 2).")
    for config in (judge_config, *compare_with):
        if not (config.effective_base_url or config.offline_heuristic or config.is_ensemble):
            raise AuditRefused(f"Judge configuration {config.name!r} has no endpoint.")
    if not ModelOutput.objects.for_version(benchmark_version).exists():
        raise AuditRefused(f"No outputs for benchmark version {benchmark_version!r}.")
    with transaction.atomic():
        audit_row = JudgeAudit.objects.create(
            judge_config=judge_config,
            benchmark_version=benchmark_version,
            repeats=repeats,
            max_outputs=max_outputs,
            started_by=started_by,
        )
        audit_row.compare_with.set([config for config in compare_with if config.pk != judge_config.pk])
        audit_row.job = start_job(
            JOB_KIND,
            started_by=started_by,
            parameters={
                "judge_audit_id": audit_row.pk,
                "judge": judge_config.name,
                "version": benchmark_version,
            },
        )
        audit_row.save(update_fields=["job"])
    return audit_row


def audited_outputs(version: str, limit: int) -> list[ModelOutput]:
    """Return up to `limit` outputs with gold, those scored by people first (agreement needs them)."""
    human_scored = set(HumanJudgement.objects.values_list("output_id", flat=True))
    outputs = list(
        ModelOutput.objects.for_version(version)
        .filter(GoldReference.objects.current_exists("item_id"))
        .select_related("item", "system")
        .order_by("pk")
    )
    outputs.sort(key=lambda output: output.pk not in human_scored)
    return outputs[:limit]


def base_prompts(outputs: Sequence[ModelOutput], hears: bool) -> list[StagePrompt]:
    """Return every applicable stage of every output as the judge would read it."""
    golds = GoldReference.objects.current_by_item({output.item_id for output in outputs})
    histories = histories_for(outputs)
    prompts = []
    for output in outputs:
        gold = golds[output.item_id]
        for stage in applicable_stages(output.item.scenario, output.system.text_only, listens=hears):
            audio = None
            if stage == RESPONSE_AUDIO:
                if not output.response_text.strip():
                    continue
                audio = (_voiced(output.response_text, VOICES[0]), "wav")
            inputs = stage_input(output, gold, stage, audio)
            prompts.append(
                StagePrompt(
                    output_id=output.pk,
                    stage=stage,
                    scenario=output.item.scenario,
                    shown=inputs.shown,
                    flag_input=inputs.flag_input,
                    gold=inputs.gold,
                    history=histories.get(output.pk),
                )
            )
    return prompts


def _voiced(text: str, voice: str, gain: float = 1.0) -> bytes:
    from annotation.audio.synthesis import synthesize, to_wav_bytes  # loads eSpeak NG: audio judges only

    speech = synthesize(text, voice=voice)
    samples = (speech.samples.astype("float32") * gain).astype("int16")
    return to_wav_bytes(samples, speech.sample_rate)


def probe_prompts(prompts: Sequence[StagePrompt]) -> dict[str, list[tuple[StagePrompt, StagePrompt]]]:
    """Return, per probe, (original, changed) prompt pairs; the cap probes' changed prompts carry
    the cap they must hit in `extra["cap"]`."""
    probes: dict[str, list[tuple[StagePrompt, StagePrompt]]] = defaultdict(list)
    for prompt in prompts:
        if prompt.stage == RESPONSE_CONTENT and isinstance(prompt.shown, str) and prompt.shown.strip():
            padded = audit.pad_reply(prompt.shown)
            probes["length"].append(
                (prompt, replace(prompt, shown=padded, flag_input=padded, probe="length"))
            )
        if prompt.stage != RESPONSE_AUDIO:
            reordered = audit.reorder_fields(prompt.shown)
            if reordered is not None:
                probes["field_order"].append((prompt, replace(prompt, shown=reordered, probe="field_order")))
        if prompt.stage == RESPONSE_AUDIO and isinstance(prompt.shown, dict):
            text = str(prompt.shown.get("response_text", ""))
            for probe, voice, gain in (("voice", VOICES[1], 1.0), ("loudness", VOICES[0], QUIET_GAIN)):
                voiced = _with_audio(prompt.shown, _voiced(text, voice, gain))
                probes[probe].append((prompt, replace(prompt, shown=voiced, probe=probe)))
        gold_emotion = str(prompt.gold.get("emotion", ""))
        wrong = audit.wrong_emotion_for(gold_emotion, EMOTIONS)
        if prompt.stage == PERCEPTION and isinstance(prompt.shown, str) and wrong:
            text = audit.with_wrong_emotion(prompt.shown, gold_emotion, wrong)
            changed = replace(
                prompt, shown=text, flag_input=text, probe="wrong_emotion", extra={"cap": WRONG_EMOTION_CAP}
            )
            probes["wrong_emotion"].append((prompt, changed))
        not_recommended = sorted(strategy_names(prompt.gold.get("not_recommended_strategies")))
        if prompt.stage == REASONING and not_recommended:
            shown, fields = audit.with_strategy(prompt.shown, not_recommended[0].replace("_", " "))
            changed = replace(
                prompt,
                shown=shown,
                flag_input=fields,
                probe="not_recommended",
                extra={"cap": NOT_RECOMMENDED_CAP},
            )
            probes["not_recommended"].append((prompt, changed))
    return probes


def _with_audio(shown: dict[str, Any], wav: bytes) -> dict[str, Any]:
    return {**shown, "audio_base64": base64.b64encode(wav).decode("ascii"), "audio_format": "wav"}


class _Asker:
    """Asks judges in chunks, counting answers for the job's progress."""

    def __init__(self, reporter: JobReporter, total: int) -> None:
        self.reporter, self.total, self.done = reporter, max(1, total), 0
        self.cache = DatabaseJudgeCache()

    def verdicts(self, config: JudgeConfig, prompts: Sequence[StagePrompt], repeat: int = 0) -> list[Any]:
        found: list[Any] = []
        for start in range(0, len(prompts), CHUNK):
            chunk = prompts[start : start + CHUNK]
            answers = ask(config, chunk, repeat=repeat, cache=self.cache, on_answer=self._answered)
            found += [verdict_of(prompt, answer) for prompt, answer in zip(chunk, answers, strict=True)]
            # Forced: one write per chunk, and each write is where a cancel is seen.
            self.reporter.progress(
                self.done / self.total, f"Asked {self.done} of about {self.total} prompts", force=True
            )
        return found

    def _answered(self) -> None:
        self.done += 1


def _judge_cost(config: JudgeConfig) -> int:
    members = list(config.members.all())
    return sum(_judge_cost(member) for member in members) if members else 1


def run_judge_audit(audit_id: int, reporter: JobReporter) -> dict[str, Any]:
    """Run every probe of an audit and return its figures (the job's result)."""
    row = JudgeAudit.objects.select_related("judge_config").filter(pk=audit_id).first()
    if row is None:
        return {"skipped": "the audit no longer exists"}
    config = row.judge_config
    others = list(row.compare_with.order_by("name"))
    outputs = audited_outputs(row.benchmark_version, row.max_outputs)
    prompts = base_prompts(outputs, judge_listens(config))
    probes = probe_prompts(prompts)
    n_probe = sum(len(pairs) for pairs in probes.values())
    total = _judge_cost(config) * (len(prompts) * row.repeats + n_probe) + sum(
        _judge_cost(other) * len(prompts) for other in others
    )
    reporter.progress(0.0, f"{len(prompts)} stages of {len(outputs)} outputs to audit", force=True)
    asker = _Asker(reporter, total)
    repeats = [asker.verdicts(config, prompts, repeat) for repeat in range(row.repeats)]
    result: dict[str, Any] = {
        "judge": config.name,
        "n_outputs": len(outputs),
        "n_prompts": len(prompts),
        "repeats": row.repeats,
        "consistency": consistency_figures(prompts, repeats),
    }
    base = repeats[0]
    base_by_key = {(p.output_id, p.stage): verdict for p, verdict in zip(prompts, base, strict=True)}
    result["sensitivity"] = {}
    result["caps"] = {}
    for probe, pairs in probes.items():
        changed = asker.verdicts(config, [pair[1] for pair in pairs])
        if probe in ("wrong_emotion", "not_recommended"):
            hits = [
                (v.final, int(p.extra["cap"]))
                for p, v in zip([pair[1] for pair in pairs], changed, strict=True)
                if v
            ]
            result["caps"][probe] = audit.cap_hits(hits).as_dict()
            continue
        paired = [
            (
                base_by_key[(original.output_id, original.stage)].fraction(original.stage),
                verdict.fraction(original.stage),
            )
            for (original, _), verdict in zip(pairs, changed, strict=True)
            if verdict is not None and base_by_key.get((original.output_id, original.stage)) is not None
        ]
        result["sensitivity"][probe] = audit.paired_difference(paired).as_dict()
    judges = [config, *others]
    scores = {config.name: base} | {other.name: asker.verdicts(other, prompts) for other in others}
    result["inter_judge"] = inter_judge_figures(prompts, [scores[judge.name] for judge in judges])
    result["inter_judge"]["judges"] = [judge.name for judge in judges]
    result["human"] = {judge.name: human_figures(judge, prompts, scores[judge.name]) for judge in judges}
    reporter.progress(1.0, f"Audited {len(prompts)} stages of {len(outputs)} outputs", force=True)
    return result


def consistency_figures(prompts: Sequence[StagePrompt], repeats: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Return per stage the spread of repeated scores (fraction of the maximum) and the cap flips."""
    figures = {}
    for stage in STAGES:
        indexes = [i for i, prompt in enumerate(prompts) if prompt.stage == stage]
        if not indexes:
            continue
        scored = {i: [run[i] for run in repeats if run[i] is not None] for i in indexes}
        figures[stage] = {
            "spread": audit.score_spread(
                {i: [v.fraction(stage) for v in vs] for i, vs in scored.items()}
            ).as_dict(),
            "cap_flips": audit.cap_flips(
                {i: [v.cap is not None for v in vs] for i, vs in scored.items()}
            ).as_dict(),
        }
    return figures


def inter_judge_figures(prompts: Sequence[StagePrompt], per_judge: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Return Krippendorff's alpha (interval) among judges, per stage, over the prompts' outputs."""
    figures: dict[str, Any] = {"stages": {}}
    if len(per_judge) < 2:
        return figures
    for stage in STAGES:
        table = [
            [judge[i].final if judge[i] is not None else None for judge in per_judge]
            for i, prompt in enumerate(prompts)
            if prompt.stage == stage
        ]
        if table:
            figures["stages"][stage] = audit.alpha_with_interval(table).as_dict()
    return figures


def human_figures(
    judge: JudgeConfig, prompts: Sequence[StagePrompt], verdicts: Sequence[Any]
) -> dict[str, Any]:
    """Return the judge's Spearman with people (stored judgements, `judge_human_agreement`) and per
    stage alpha of this audit's scores with each evaluator's rubric scores (evaluators as raters)."""
    table = judge_human_agreement(judge, n_boot=1000)
    spearman = {
        row.label: _correlation(row)
        for row in [*table.by_stage, *([table.all_stages_sum] if table.all_stages_sum else [])]
    }
    human: dict[tuple[int, str], dict[int, float]] = defaultdict(dict)
    for output_id, stage, evaluator_id, score in HumanJudgement.objects.filter(
        output_id__in={prompt.output_id for prompt in prompts}
    ).values_list("output_id", "stage", "evaluator_id", "score"):
        human[(output_id, stage)][evaluator_id] = score
    evaluators = sorted({evaluator for scores in human.values() for evaluator in scores})
    alphas = {}
    for stage in STAGES:
        rows = [
            [
                verdict.final if verdict is not None else None,
                *[human[(p.output_id, stage)].get(e) for e in evaluators],
            ]
            for p, verdict in zip(prompts, verdicts, strict=True)
            if p.stage == stage and (p.output_id, stage) in human
        ]
        if rows:
            alphas[stage] = audit.alpha_with_interval(rows).as_dict()
    return {"spearman": spearman, "alpha": alphas}


def _correlation(row: Any) -> dict[str, Any]:
    correlation = row.correlation
    if correlation is None:
        return audit.Figure(None, None, None, row.n, row.note).as_dict()
    return audit.Figure(correlation.rho, correlation.low, correlation.high, correlation.n).as_dict()


PROBE_LABELS = {
    "length": "Reply padded with neutral sentences",
    "field_order": "Output fields in reverse order",
    "voice": "Reply voiced by another voice",
    "loudness": "Reply 12 dB quieter",
    "wrong_emotion": "Wrong primary emotion (perception cap)",
    "not_recommended": "Not-recommended strategy (reasoning cap)",
}


def audit_page(row: JudgeAudit) -> dict[str, Any]:
    """Return what the audit page shows: its result's figures as rows and interval charts."""
    result = row.job.result if row.job is not None and isinstance(row.job.result, dict) else None
    if not result or "consistency" not in result:
        return {"result": None}
    sensitivity = [(PROBE_LABELS[probe], figure) for probe, figure in result["sensitivity"].items()]
    caps = [(PROBE_LABELS[probe], figure) for probe, figure in result["caps"].items()]
    spread = [(stage, figures["spread"]) for stage, figures in result["consistency"].items()]
    flips = [(stage, figures["cap_flips"]) for stage, figures in result["consistency"].items()]
    inter = list(result["inter_judge"].get("stages", {}).items())
    human = [
        (f"{judge}: {label}", figure)
        for judge, figures in result["human"].items()
        for label, figure in [
            *((f"ρ {name}", f) for name, f in figures["spearman"].items()),
            *((f"α {stage}", f) for stage, f in figures["alpha"].items()),
        ]
    ]
    return {
        "result": result,
        "charts": [
            (
                "Sensitivity to what should not matter (changed - original, share of the stage maximum)",
                audit.interval_chart(sensitivity, differences=True),
            ),
            ("Caps hit (share)", audit.interval_chart(caps, 0.0, 1.0)),
            (
                "Self-consistency: spread of k scores (SD, share of the stage maximum)",
                audit.interval_chart(spread, 0.0, 0.5),
            ),
            ("Self-consistency: hard cap flips (share)", audit.interval_chart(flips, 0.0, 1.0)),
            ("Inter-judge Krippendorff's α (interval)", audit.interval_chart(inter)),
            ("Agreement with people", audit.interval_chart(human)),
        ],
    }
