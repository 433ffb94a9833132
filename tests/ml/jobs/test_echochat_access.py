"""Who may use EchoChat is decided once (ml.jobs.access), for the training pages and the Django admin."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404
from django.test import Client
from django.urls import reverse

from ml.jobs.access import ML_ROLES, checkpoint_or_404, ml_job_or_404
from ml.jobs.launch import SFT_JOB
from ml.jobs.models import Checkpoint
from webapp.models import Job, User
from webapp.roles import has_role

OTHER_ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "norole")


def may_use_echochat(user: User | AnonymousUser) -> bool:
    return has_role(user, *ML_ROLES)


def test_only_admins_may_use_echochat(users: dict[str, User]) -> None:
    assert may_use_echochat(users["admin"])
    assert not any(may_use_echochat(users[name]) for name in OTHER_ROLES)
    assert not may_use_echochat(AnonymousUser())


def test_superusers_may_use_echochat(make_user: Callable[..., User]) -> None:
    assert may_use_echochat(make_user(None, "root", is_superuser=True, is_staff=True))


def test_an_echochat_job_is_found_and_other_jobs_are_not(db: None) -> None:
    echochat = Job.objects.create(kind=SFT_JOB)
    other = Job.objects.create(kind="judge_run")

    assert ml_job_or_404(echochat.pk) == echochat
    with pytest.raises(Http404):
        ml_job_or_404(other.pk)


def test_a_missing_checkpoint_is_not_found(db: None) -> None:
    checkpoint = Checkpoint.objects.create(name="sft-1", kind=Checkpoint.Kind.SFT, uri="/models/sft-1")

    assert checkpoint_or_404(checkpoint.pk) == checkpoint
    with pytest.raises(Http404):
        checkpoint_or_404(checkpoint.pk + 1)


def test_admins_browse_checkpoints_in_the_django_admin(client_for: Callable[[str], Client]) -> None:
    Checkpoint.objects.create(name="sft-1", kind=Checkpoint.Kind.SFT, uri="/models/sft-1")

    response = client_for("admin").get(reverse("admin:ml_checkpoint_changelist"))

    assert response.status_code == 200
    assert "sft-1" in response.content.decode()


@pytest.mark.parametrize("name", OTHER_ROLES)
def test_other_roles_do_not_reach_the_ml_admin(client_for: Callable[[str], Client], name: str) -> None:
    response = client_for(name).get(reverse("admin:ml_checkpoint_changelist"))

    # Not staff: the admin sends them to its own login page.
    assert response.status_code == 302


def test_nobody_adds_a_dataset_snapshot_by_hand(client_for: Callable[[str], Client]) -> None:
    assert client_for("admin").get(reverse("admin:ml_datasetsnapshot_add")).status_code == 403
    assert client_for("admin").get(reverse("admin:ml_datasetsnapshot_changelist")).status_code == 200
