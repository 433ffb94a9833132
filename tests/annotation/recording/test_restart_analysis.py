"""Running a take's analysis again: only after its job failed, and only once however many admins press retry."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from annotation.recording.models import Take
from annotation.recording.takes import (
    ANALYSIS_JOB_KIND,
    AnalysisNotRestartable,
    analysis_restartable,
    restart_analysis,
)
from tests.factories import TakeFactory
from webapp.models import Job, JobStatus, User

pytestmark = pytest.mark.django_db


def failed_take() -> Take:
    job = Job.objects.create(kind=ANALYSIS_JOB_KIND, status=JobStatus.FAILED)
    return TakeFactory.create(status=Take.Status.ANALYSING, analysis_job=job)


def test_a_failed_analysis_is_queued_again(users: dict[str, User]) -> None:
    take = failed_take()

    job = restart_analysis(take, users["admin"])

    take.refresh_from_db()
    assert take.analysis_job == job and job.status == JobStatus.QUEUED
    assert job.parameters == {"take": take.pk}


def test_a_second_retry_of_the_same_failure_is_refused(users: dict[str, User]) -> None:
    # given two admins looking at the same failed take
    take = failed_take()
    restart_analysis(take, users["admin"])

    # when the second presses retry with the page they loaded before the first
    with pytest.raises(AnalysisNotRestartable, match="already queued"):
        restart_analysis(take, users["admin"])

    # then there is one new analysis job, not two
    assert Job.objects.filter(kind=ANALYSIS_JOB_KIND, status=JobStatus.QUEUED).count() == 1


def test_a_take_past_its_analysis_is_not_analysed_again(users: dict[str, User]) -> None:
    take = TakeFactory.create(status=Take.Status.IN_REVIEW)

    assert not analysis_restartable(take)
    with pytest.raises(AnalysisNotRestartable, match="still waiting"):
        restart_analysis(take, users["admin"])


@pytest.mark.parametrize(
    ("job_status", "restartable"),
    [
        (None, True),
        (JobStatus.FAILED, True),
        (JobStatus.CANCELLED, True),
        (JobStatus.QUEUED, False),
        (JobStatus.RUNNING, False),
    ],
)
def test_only_an_analysis_that_ended_unmeasured_may_restart(
    job_status: JobStatus | None, restartable: bool
) -> None:
    job = Job.objects.create(kind=ANALYSIS_JOB_KIND, status=job_status) if job_status else None
    take = TakeFactory.create(status=Take.Status.ANALYSING, analysis_job=job)

    assert analysis_restartable(take) is restartable


def test_the_page_tells_the_admin_when_a_retry_came_too_late(
    client_for: Callable[[str], Client], users: dict[str, User]
) -> None:
    take = failed_take()
    restart_analysis(take, users["admin"])

    response = client_for("admin").post(reverse("annotation:take_reanalyse", args=[take.public_id]))

    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:take_detail", args=[take.public_id])
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "This take's analysis is already queued or running."
    ]
