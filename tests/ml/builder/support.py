"""The builder tests' taxonomy, builds pointed at a fake LLM, and jobs run in this process."""

from __future__ import annotations

from typing import Any

from ml.builder.models import Build, TaxonomyDomain, TaxonomySubcategory, TaxonomyTopic
from webapp.jobs import run_job
from webapp.models import Job, JobStatus

DOMAINS = {
    "Work and study": {"Career": ["a missed promotion", "a harsh review"], "School": ["failing an exam"]},
    "Family": {"Parents": ["a parent's illness"], "Siblings": ["an argument with my brother"]},
}


def make_taxonomy() -> list[TaxonomyTopic]:
    """Create two domains, four subcategories and five topics."""
    topics = []
    for domain_name, subcategories in DOMAINS.items():
        domain = TaxonomyDomain.objects.create(name=domain_name)
        for subcategory_name, names in subcategories.items():
            subcategory = TaxonomySubcategory.objects.create(domain=domain, name=subcategory_name)
            topics += [TaxonomyTopic.objects.create(subcategory=subcategory, name=name) for name in names]
    return topics


def build_config(base_url: str, **overrides: Any) -> dict[str, Any]:
    """Return a build configuration using two models on the fake endpoint."""
    config: dict[str, Any] = {
        "endpoints": [
            {
                "base_url": base_url,
                "model": "writer-a",
                "max_concurrency": 4,
                "max_retries": 1,
                "timeout_s": 10,
            },
            {
                "base_url": base_url,
                "model": "writer-b",
                "max_concurrency": 2,
                "max_retries": 1,
                "timeout_s": 10,
            },
        ],
        "batch_size": 10,
        "audio_threads": 2,
    }
    config.update(overrides)
    return config


def make_build(base_url: str, single: int = 10, dialogues: int = 2, **overrides: Any) -> Build:
    """Create a build of `single` samples and `dialogues` five-turn dialogues."""
    return Build.objects.create(
        name=f"test build {Build.objects.count() + 1}",
        single_turn_count=single,
        dialogue_count=dialogues,
        seed=7,
        config=build_config(base_url, **overrides),
    )


def run_queued_jobs(limit: int = 200) -> list[Job]:
    """Run every queued job in this process, oldest first, until none is left; return them."""
    ran: list[Job] = []
    for _ in range(limit):
        job = Job.objects.filter(status=JobStatus.QUEUED).order_by("id").first()
        if job is None:
            return ran
        run_job(job.pk)
        job.refresh_from_db()
        ran.append(job)
    raise AssertionError("jobs kept queueing more jobs")
