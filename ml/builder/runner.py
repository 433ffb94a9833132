"""Builds as Celery pipelines: each stage is one or more resumable jobs (``webapp.jobs``), one after another.

A stage job (kind ``builder_stage``, parameters build, stage, shard) makes the stage's state rows,
releases rows a dead attempt of itself left claimed, then claims batches of units until none is
left, running each unit's step on a thread pool (LLM stages: as many threads as the endpoints
allow in flight; audio stages: ``audio_threads``) and writing each batch's results in one
transaction as the claiming attempt. Several shards of a stage share the work through the claims
(near the stage's end in smaller batches, ``claims.claim_size``, so they finish together);
whichever finishes last (no row pending or claimed) marks the stage done and starts the next
stage's jobs, under a row lock so that happens once. After the last stage the build is exported as a new version
(``export_versions.start_export``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from celery.signals import worker_init
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ml.builder import claims
from ml.builder.config import BuildConfig
from ml.builder.export_versions import start_export
from ml.builder.llm import BuildLlm, endpoint_client
from ml.builder.logic.consistency import EmotionClassifier, EndpointClassifier
from ml.builder.logic.local_classifier import LocalModelClassifier
from ml.builder.logic.prompts import prompt_hashes
from ml.builder.models import (
    Build,
    BuildSample,
    BuildStage,
    BuildStatus,
    SampleStage,
    SampleStatus,
    SpotCheck,
    StageStatus,
)
from ml.builder.stages import (
    AUDIO_STAGES,
    CONSISTENCY,
    LLM_STAGES,
    PLAN,
    STAGE_ERROR,
    STAGE_TITLES,
    STAGE_VERSIONS,
    STAGES,
    next_stage,
    stages_from,
)
from ml.builder.steps import audio_steps, llm_steps
from ml.builder.steps.plan import plan_build
from webapp.archive import archive_rows
from webapp.db import ThreadOrm, is_transient
from webapp.jobs import JobCancelled, JobLost, JobReporter, JobResult, job_task, start_job
from webapp.lib import row_outcome
from webapp.models import Job, JobStatus, User

logger = logging.getLogger(__name__)
SUMMARY_EVERY_SECONDS = 2.0
CANCEL_CHECK_SECONDS = 1.0

Step = Callable[[Sequence[BuildSample], Any], list[claims.SampleResult]]
STEPS: dict[str, Step] = {
    "trajectories": llm_steps.trajectories,
    "queries": llm_steps.queries,
    "query_filter": llm_steps.query_filter,
    "user_audio": audio_steps.user_audio,
    "consistency": audio_steps.consistency,
    "perception": audio_steps.perception,
    "responses": llm_steps.responses,
    "response_filter": llm_steps.response_filter,
    "response_audio": audio_steps.response_audio,
}


class BuildBusy(Exception):
    """The build has stage jobs running; it cannot be re-run from a stage now."""


def provenance_of(config: BuildConfig) -> dict[str, Any]:
    """Return what the export records about how its samples were made."""
    return {
        "stage_versions": dict(STAGE_VERSIONS),
        "prompts": prompt_hashes(),
        "models": [endpoint.model for endpoint in config.endpoints],
        "tts": {
            "backend": config.tts_backend,
            "model": config.tts_model if config.tts_backend != "espeak" else "",
        },
        "consistency": config.consistency_method,
        "thresholds": {
            "query_min_score": config.query_min_score,
            "response_min_score": config.response_min_score,
            "consistency_min_confidence": config.consistency_min_confidence,
        },
    }


def start_build(build: Build, started_by: User | None = None) -> Build:
    """Check the configuration, make one row per stage and start planning."""
    config = BuildConfig.from_json(build.config)
    with transaction.atomic():
        if Build.objects.select_for_update().get(pk=build.pk).status != BuildStatus.DRAFT:
            raise BuildBusy("this build has been started already; resume or re-run it instead")
        for stage in STAGES:
            BuildStage.objects.get_or_create(build=build, stage=stage)
        build.status = BuildStatus.RUNNING
        build.provenance = provenance_of(config)
        build.save(update_fields=["status", "provenance"])
        start_stage(build, PLAN, config, started_by)
    return build


def stage_queue(stage: str) -> str:
    """Return the queue a stage's jobs go to: the LLM pool, the audio pool, or `default` (planning)."""
    if stage in LLM_STAGES:
        return str(settings.BUILDER_LLM_QUEUE)
    if stage in AUDIO_STAGES:
        return str(settings.BUILDER_AUDIO_QUEUE)
    return "default"


def start_stage(build: Build, stage: str, config: BuildConfig, started_by: User | None = None) -> list[Job]:
    """Mark a stage running and start its jobs (one per shard; planning runs alone)."""
    shards = 1 if stage == PLAN else config.shards
    jobs = [
        start_job(
            "builder_stage",
            started_by=started_by,
            parameters={"build": build.pk, "stage": stage, "shard": shard},
            queue=stage_queue(stage),
        )
        for shard in range(shards)
    ]
    BuildStage.objects.filter(build=build, stage=stage).update(
        status=StageStatus.RUNNING,
        job=jobs[0],
        version=STAGE_VERSIONS[stage],
        settings=provenance_of(config)["thresholds"],
        started_at=timezone.now(),
        finished_at=None,
    )
    return jobs


def _step_context(build: Build, stage: str, config: BuildConfig) -> tuple[Any, int, BuildLlm | None]:
    if stage in LLM_STAGES:
        llm = BuildLlm(build.pk, stage, config.endpoints, config.temperature)
        return (
            llm_steps.LlmStepContext(llm, config.query_min_score, config.response_min_score),
            llm.concurrency,
            llm,
        )
    classifiers: dict[str, EmotionClassifier] = {}
    methods = config.consistency_methods() if stage == CONSISTENCY else ()
    if "endpoint" in methods and config.consistency_endpoint:
        classifiers["endpoint"] = EndpointClassifier(endpoint_client(config.consistency_endpoint))
    if "local" in methods:
        # Loaded once per stage job (not per sample); its threads share it.
        classifiers["local"] = LocalModelClassifier(config.consistency_model_path)
    context = audio_steps.AudioStepContext.for_build(config, classifiers)
    return context, config.audio_threads, None


@worker_init.connect
def _warm_up_worker(**_: Any) -> None:
    # Imported once in the Celery worker's parent process, before its pool forks: every child
    # starts with SciPy loaded instead of paying for it on its first audio sample.
    audio_steps.warm_up(models=False)


def _run_unit(step: Step, samples: list[BuildSample], context: Any) -> list[claims.SampleResult]:
    try:
        results = step(samples, context)
        return claims.drop_whole_dialogue([(sample.pk, sample.turn) for sample in samples], results)
    except Exception as exc:
        if is_transient(exc):
            # The database (or broker) went away, not the sample: the stage starts over from its
            # last finished row (webapp.jobs.run_job) and this unit is claimed again.
            raise
        # One sample the step cannot handle (a bug, strange audio) is dropped with the error,
        # counted on the build page, rather than failing a stage of thousands.
        logger.exception("builder step failed on %s", samples[0])
        detail = f"{type(exc).__name__}: {exc}"
        return [claims.SampleResult(sample.pk, False, STAGE_ERROR, detail) for sample in samples]


def run_stage(job: Job, reporter: JobReporter, build: Build, stage: str) -> dict[str, Any]:
    """Work through the stage's pending units as this job's attempt; return the stage's counts."""
    config = BuildConfig.from_json(build.config)
    claims.ensure_rows(build.pk, stage)
    released = claims.release_dead_claims(job, build.pk, stage)
    if released:
        reporter.log(f"Took back {released} samples a stopped worker had claimed")
    context, threads, llm = _step_context(build, stage, config)
    stage_row = BuildStage.objects.get(build=build, stage=stage)
    # The stage's summary is written about every SUMMARY_EVERY_SECONDS whichever shard writes it,
    # so each of N shards writes it N times less often; a shard's first batch is not reported
    # (its end is: `refresh_summary` below, and `advance`).
    summary_every = SUMMARY_EVERY_SECONDS * max(1, config.shards)
    last_summary = last_cancel_check = time.monotonic()
    try:
        run_unit = ThreadOrm().closing(_run_unit)  # each pool thread's connection closed after its unit
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            while units := claims.claim_batch(job, build.pk, stage, config.batch_size, config.shards):
                futures = {
                    pool.submit(run_unit, STEPS[stage], [row.sample for row in unit], context): unit
                    for unit in units
                }
                # The batch is written in one transaction (one commit, not one per sample); a worker
                # killed before it leaves the rows claimed, and its successor does them again.
                claims.finish_units(
                    job, [(futures[future], future.result()) for future in as_completed(futures)]
                )
                # Counting a stage's rows costs a scan: done every few seconds, not every batch,
                # so a 400K-sample stage does not spend its time counting itself.
                now = time.monotonic()
                if now - last_summary > summary_every:
                    done, total = claims.stage_progress(build.pk, stage)
                    reporter.progress(done / max(total, 1), f"{STAGE_TITLES[stage]}: {done} of {total}")
                    claims.refresh_summary(stage_row)
                    last_summary = last_cancel_check = time.monotonic()
                elif now - last_cancel_check > CANCEL_CHECK_SECONDS:
                    # Asked about once a second, not after each of a fast stage's many batches.
                    reporter.check_cancelled()
                    last_cancel_check = now
    except claims.ClaimLost as exc:
        raise JobLost(str(exc)) from exc
    finally:
        if llm is not None:
            llm.close()
    return claims.refresh_summary(stage_row).counts


def advance(build: Build, stage: str) -> bool:
    """Mark the stage done and start the next when no row is left; return True when this call did.

    A stage whose rows failed beyond ``FAILED_ERROR_SHARE`` (`claims.stage_tally`) stops the build
    as failed instead: what is left is a minority chosen by whatever failed the rest, and nothing
    downstream would stand for the build (docs/builder.md, docs/jobs.md).
    """
    with transaction.atomic():
        row = BuildStage.objects.select_for_update().get(build=build, stage=stage)
        if row.status in (StageStatus.DONE, StageStatus.FAILED) or (
            stage != PLAN and claims.unfinished_rows(build.pk, stage)
        ):
            return False
        row.finished_at = timezone.now()
        if stage != PLAN:
            claims.refresh_summary(row)
        tally = claims.stage_tally(row.counts) if stage != PLAN else None
        if tally is not None and tally.status == row_outcome.FAILED:
            row.status = StageStatus.FAILED
            row.save(update_fields=["status", "finished_at"])
            Build.objects.filter(pk=build.pk).update(status=BuildStatus.FAILED)
            logger.warning("build %s stopped at %s: %s", build.pk, stage, tally.sentence())
            return True
        row.status = StageStatus.DONE
        row.save(update_fields=["status", "finished_at"])
        following = next_stage(stage)
        if following is not None:
            start_stage(build, following, BuildConfig.from_json(build.config))
        else:
            Build.objects.filter(pk=build.pk).update(status=BuildStatus.SUCCEEDED)
            reran = bool(Build.objects.get(pk=build.pk).provenance.get("tightenings"))
            start_export(build, "a re-run finished" if reran else "the pipeline finished")
    return True


@job_task("builder_stage", title="EchoDialogue build stage")
def builder_stage_job(job: Job, reporter: JobReporter) -> JobResult:
    """Run one shard of one build stage, then move the build on when the stage is complete."""
    build = Build.objects.filter(pk=job.parameters["build"]).first()
    if build is None:
        return {"skipped": "the build was deleted"}
    stage = str(job.parameters["stage"])
    try:
        if stage == PLAN:
            result: dict[str, Any] = plan_build(build, BuildConfig.from_json(build.config), reporter.progress)
        else:
            result = run_stage(job, reporter, build, stage)
    except JobCancelled:
        _mark_stopped(build, stage, BuildStatus.CANCELLED)
        raise
    except JobLost:
        raise  # another attempt owns the stage now; it decides what the build becomes
    except Exception as exc:
        # A connection error is retried (the stage resumes); were it to outlast every retry, the
        # database it would be recorded in is down too, and `stopped_short` finds the stage anyway.
        if not is_transient(exc):
            _mark_stopped(build, stage, BuildStatus.FAILED)
        raise
    advance(build, stage)
    if stage == PLAN:
        return {"stage": stage, **result}
    # The job ends by the rows it did itself (`webapp.jobs.ended`); whether the build goes on is
    # the stage's tally over every shard's rows (`advance`). With one shard they are the same.
    tally = claims.job_tally(job, build.pk, stage)
    return {"stage": stage, **result, row_outcome.RESULT_KEY: tally.as_result()}


def _mark_stopped(build: Build, stage: str, status: str) -> None:
    """Record that a stage stopped short (cancelled or failed); ``resume_build`` picks it up again."""
    BuildStage.objects.filter(build=build, stage=stage).update(
        status=StageStatus.FAILED if status == BuildStatus.FAILED else StageStatus.PENDING
    )
    Build.objects.filter(pk=build.pk).update(status=status)


def _stage_jobs_in_flight(build: Build) -> bool:
    return BuildStage.objects.filter(
        build=build, job__status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
    ).exists()


def stopped_short(build: Build) -> bool:
    """Return True when a started build has an unfinished stage and no stage job queued or running.

    Whatever stopped it (a job failed, cancelled while running or before it started, a worker
    lost), this is what ``resume_build`` picks up again.
    """
    if build.status == BuildStatus.DRAFT or _stage_jobs_in_flight(build):
        return False
    return BuildStage.objects.filter(build=build).exclude(status=StageStatus.DONE).exists()


def failed_by_rows(row: BuildStage) -> bool:
    """Return True when the stage stopped its build because too many of its rows failed (`advance`)."""
    tally = claims.stage_tally(row.counts)
    return row.status == StageStatus.FAILED and tally is not None and tally.status == row_outcome.FAILED


def resume_build(build: Build, started_by: User | None = None) -> list[Job]:
    """Start again the first unfinished stage of a build whose jobs failed or were cancelled.

    A stage that failed by its rows (`failed_by_rows`) does again the rows it failed on, with their
    dialogues (`rerun_from`, noted in the provenance), once the cause (an endpoint, the TTS) is fixed.
    """
    with transaction.atomic():
        # The build's lock: two resumes at once (two tabs, an API retry) would otherwise both see
        # no job running and both start the stage.
        Build.objects.select_for_update().get(pk=build.pk)
        if _stage_jobs_in_flight(build):
            raise BuildBusy("the build still has stage jobs queued or running")
        row = BuildStage.objects.filter(build=build).exclude(status=StageStatus.DONE).order_by("id").first()
        if row is None:
            return []
        if failed_by_rows(row):
            failed = SampleStage.objects.filter(build=build, stage=row.stage).filter(claims.ERROR_DROPS)
            samples = set(failed.values_list("sample_id", flat=True))
            note = {"retried_errors": len(samples)}
            return rerun_from(build, row.stage, {}, started_by, samples=samples, note=note)[0]
        Build.objects.filter(pk=build.pk).update(status=BuildStatus.RUNNING)
        return start_stage(build, row.stage, BuildConfig.from_json(build.config), started_by)


def rerun_from(
    build: Build,
    stage: str,
    changes: Mapping[str, Any],
    started_by: User | None = None,
    *,
    samples: Collection[int] | None = None,
    note: Mapping[str, Any] | None = None,
) -> tuple[list[Job], int]:
    """Apply tighter settings and redo `stage` and every stage after it (and nothing before), for
    `samples` (default: every sample that reached `stage`; a dialogue's turns always together).
    Return the started jobs and how many samples go through again.

    The one re-run path (``pages.retune.tighten`` passes the samples its filter kept). Samples
    dropped at those stages come back; samples an annotator dropped (``dropped_at`` blank) do not.
    LLM answers already paid for are reused, so tightening a threshold costs no new model call.
    Each re-run is appended to the provenance's ``tightenings`` (with `note`), never overwriting
    the earlier ones, so the export tells every tightening a build went through.
    """
    if stage == PLAN:
        raise ValueError("planning cannot be re-run: make a new build")
    config = BuildConfig.from_json({**build.config, **changes})
    with transaction.atomic():
        locked = Build.objects.select_for_update().get(pk=build.pk)
        if BuildStage.objects.filter(
            build=build, job__status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
        ).exists():
            raise BuildBusy("wait for the running stage to finish (or cancel it) before re-running")
        redone = stages_from(stage)
        rows = SampleStage.objects.filter(build=build, stage__in=redone)
        dropped = BuildSample.objects.filter(build=build, dropped_at__in=redone)
        if samples is not None:
            # A dialogue is redone whole, from its first turn: a later turn alone would have no
            # head row to be claimed with (claims.claim_batch) and would hear no earlier turns.
            dialogues = BuildSample.objects.filter(pk__in=samples, dialogue__isnull=False).values(
                "dialogue_id"
            )
            whole = set(samples) | set(
                BuildSample.objects.filter(dialogue_id__in=dialogues).values_list("pk", flat=True)
            )
            rows, dropped = rows.filter(sample_id__in=whole), dropped.filter(pk__in=whole)
        count = rows.filter(stage=stage).count()
        # Open checks of the samples redone are void: they would judge a sample that is about to
        # change (a new draw picks them again once they are finished). Decided checks stay.
        voided = archive_rows(
            SpotCheck.objects.filter(sample_id__in=rows.values("sample_id"), submitted_at__isnull=True),
            actor=None,
            reason="Void: its sample was redone",
        )
        rows.delete()
        dropped.update(status=SampleStatus.ACTIVE, dropped_at="", drop_reason="")
        # Counts and cost are recomputed from the rows (refresh_summary) as the stages run again.
        BuildStage.objects.filter(build=build, stage__in=redone).update(
            status=StageStatus.PENDING, finished_at=None
        )
        entry = {
            "stage": stage,
            "changes": dict(changes),
            "samples": count,
            "voided_spot_checks": voided,
            "by": started_by.get_username() if started_by else "",
            "at": timezone.now().isoformat(),
            **(note or {}),
        }
        tightenings = [*locked.provenance.get("tightenings", []), entry]
        build.config = config.to_json()
        build.status = BuildStatus.RUNNING
        build.provenance = {**provenance_of(config), "tightenings": tightenings}
        build.save(update_fields=["config", "status", "provenance"])
        return start_stage(build, stage, config, started_by), count
