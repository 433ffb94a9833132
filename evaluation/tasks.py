"""Job functions of the evaluation app (run by the Celery worker through webapp.jobs)."""

from __future__ import annotations

from evaluation.echomind.answers import JUDGE_REPLIES_JOB
from evaluation.echomind.replies.quality import QUALITY_JOB, measure_reply_audio
from evaluation.judging.runs import run_judge_run
from webapp.jobs import JobReporter, JobResult, job_task
from webapp.lib.row_outcome import RESULT_KEY, RowTally
from webapp.models import Job


@job_task("judge_run", queue="default", title="Judge a system's outputs")
def judge_run(job: Job, reporter: JobReporter) -> JobResult:
    """Judge every stage of a system's outputs not yet judged by the run's judge configuration."""
    return run_judge_run(int(job.parameters["judge_run_id"]), reporter)


@job_task("judge_audit", queue="default", title="Audit a judge configuration")
def judge_audit(job: Job, reporter: JobReporter) -> JobResult:
    """Probe one judge configuration for consistency, bias and agreement (evaluation.results.judge_audit)."""
    from evaluation.results.judge_audit import run_judge_audit

    return run_judge_audit(int(job.parameters["judge_audit_id"]), reporter)


@job_task(JUDGE_REPLIES_JOB, queue="default", title="Judge EchoMind replies (C1-C4, VES)")
def echomind_judge_replies(job: Job, reporter: JobReporter) -> JobResult:
    """Score every EchoMind reply lacking C1-C4 and VES with one judge configuration."""
    from evaluation.echomind.answers import judge_replies
    from evaluation.judging.models import JudgeConfig

    judged, errors = judge_replies(JudgeConfig.objects.get(pk=int(job.parameters["judge"])))
    tally = RowTally(judged + errors, errors, noun="replies")
    return {"judged": judged, "judge_errors": errors, RESULT_KEY: tally.as_result()}


@job_task(QUALITY_JOB, queue="default", title="Measure EchoMind reply audio (DNSMOS)")
def echomind_reply_quality(job: Job, reporter: JobReporter) -> JobResult:
    """Store DNSMOS P.808 of every EchoMind reply with audio that has none yet."""
    return measure_reply_audio(reporter).as_dict()


@job_task("measure_response_audio", queue="default", title="Measure response audio (DNSMOS, loudness, rate)")
def measure_response_audio(job: Job, reporter: JobReporter) -> JobResult:
    """Measure the objective metrics of every output of a version whose audio has none yet."""
    from evaluation.outputs.audio_metrics import measure_version

    return measure_version(str(job.parameters["benchmark_version"]), reporter)
