"""Job functions of the ml app, on the gpu queue (run by GPU workers through webapp.jobs) but for
endpoint inference, which only talks HTTP and runs on the default queue (``ml.jobs.endpoint_inference``).

The work is in ``ml.jobs.training.jobs`` (the three training jobs), ``ml.jobs.inference``,
``ml.jobs.echomind.inference`` and ``ml.jobs.reward_scoring``, imported inside each function: they load torch and transformers, which
the web process (that imports this module to know the job kinds) never needs.
"""

from __future__ import annotations

from collections.abc import Callable

from ml.jobs.launch import (
    ECHOMIND_INFERENCE_JOB,
    ENDPOINT_INFERENCE_JOB,
    INFERENCE_JOB,
    JOB_TITLES,
    REWARD_SCORING_JOB,
    REWARD_TRAINING_JOB,
    RL_JOB,
    SFT_JOB,
)
from webapp.jobs import JobFunction, JobReporter, JobResult, job_task
from webapp.models import Job


def _gpu_job(kind: str) -> Callable[[JobFunction], JobFunction]:
    """Register a job function of this app: every one needs a GPU worker, titled as the pages show it."""
    return job_task(kind, queue="gpu", title=JOB_TITLES[kind])


@_gpu_job(INFERENCE_JOB)
def echochat_inference(job: Job, reporter: JobReporter) -> JobResult:
    """Answer a benchmark split with a checkpoint; the answers become a System's outputs."""
    from ml.jobs.inference import run_inference_job

    return run_inference_job(job, reporter)


@job_task(ENDPOINT_INFERENCE_JOB, queue="default", title=JOB_TITLES[ENDPOINT_INFERENCE_JOB])
def endpoint_inference(job: Job, reporter: JobReporter) -> JobResult:
    """Send a benchmark split's takes to an OpenAI-compatible endpoint; the answers become a System's outputs."""
    from ml.jobs.endpoint_inference import run_endpoint_inference_job

    return run_endpoint_inference_job(job, reporter)


@_gpu_job(ECHOMIND_INFERENCE_JOB)
def echomind_inference(job: Job, reporter: JobReporter) -> JobResult:
    """Answer the EchoMind delivery sets' questions and reply to each delivery with a checkpoint."""
    from ml.jobs.echomind.inference import run_echomind_inference_job

    return run_echomind_inference_job(job, reporter)


@_gpu_job(REWARD_SCORING_JOB)
def reward_scoring(job: Job, reporter: JobReporter) -> JobResult:
    """Score a system's outputs with a reward model."""
    from ml.jobs.reward_scoring import run_reward_scoring_job

    return run_reward_scoring_job(job, reporter)


@_gpu_job(REWARD_TRAINING_JOB)
def reward_training(job: Job, reporter: JobReporter) -> JobResult:
    """Train the reward model from the gold references' reference responses."""
    from ml.jobs.training.jobs import run_reward_training_job

    return run_reward_training_job(job, reporter)


@_gpu_job(SFT_JOB)
def sft_aaa(job: Job, reporter: JobReporter) -> JobResult:
    """Supervised fine-tuning with Acoustic-Anchored Attention."""
    from ml.jobs.training.jobs import run_sft_job

    return run_sft_job(job, reporter)


@_gpu_job(RL_JOB)
def rl_sdca(job: Job, reporter: JobReporter) -> JobResult:
    """GRPO with Step-Decomposed Credit Assignment."""
    from ml.jobs.training.jobs import run_rl_job

    return run_rl_job(job, reporter)
