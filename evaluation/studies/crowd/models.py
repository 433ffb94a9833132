"""Listening studies opened to crowd raters: the link, the seats, the raters and their screening.

An external rater holds no account. The study's assignments point to a `CrowdSeat`'s user, a
placeholder that cannot log in and has no role, planned like any invited evaluator
(`workflows.open_to_crowd`); a rater who passes screening claims one free seat, and from then on
the seat's assignments are theirs. So every rating page and workflow that works for an
evaluator's assignments works for a crowd rater's, whatever trial type the study uses.
"""

from __future__ import annotations

import secrets
import string
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models

from evaluation.studies.crowd.platforms import Platform
from evaluation.studies.models import Study


def new_link_token() -> str:
    """Return the random part of a study's crowd link (it names the link; guessing it is hopeless)."""
    return secrets.token_urlsafe(16)


def new_code() -> str:
    """Return a completion code: 8 characters raters copy without mistakes (no 0/O, 1/I)."""
    alphabet = "".join(c for c in string.ascii_uppercase + string.digits if c not in "01OI")
    return "".join(secrets.choice(alphabet) for _ in range(8))


class CrowdLink(models.Model):
    """How a study is opened to external raters: the platform, its codes and return links, limits."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="crowd_link")
    token = models.CharField(max_length=40, unique=True, default=new_link_token, editable=False)
    platform = models.CharField(max_length=8, choices=[(p.value, p.name.title()) for p in Platform])
    completion_code = models.CharField(max_length=40, default=new_code)
    screened_out_code = models.CharField(max_length=40, default=new_code)
    completion_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="Where finished raters go; {code} is replaced. Empty: the platform's",
    )
    screened_out_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="Where screened-out raters go; {code} is replaced. Empty: the platform's",
    )
    bonus = models.DecimalField(
        max_digits=7,
        decimal_places=2,
        default=0,
        help_text="Paid to each rater who completes (payment sheet)",
    )
    requests_per_minute = models.PositiveIntegerField(
        default=120, help_text="Per address on this link; more gets a polite 'slow down' page"
    )
    is_open = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.platform} link of study {self.study_id}"


class CrowdSeat(models.Model):
    """One place in a crowd study: a placeholder user the study's plan gave a queue of assignments."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="crowd_seats")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="crowd_seat")

    class Meta:
        ordering = ["study", "pk"]

    def __str__(self) -> str:
        return f"seat {self.pk} of study {self.study_id}"


class CrowdRater(models.Model):
    """One external id on one study's link: one participation, resumable, finished once."""

    link = models.ForeignKey(CrowdLink, on_delete=models.CASCADE, related_name="raters")
    external_id = models.CharField(max_length=100)
    platform_study = models.CharField(max_length=100, blank=True)
    platform_session = models.CharField(max_length=100, blank=True)
    seat = models.OneToOneField(
        CrowdSeat, null=True, blank=True, on_delete=models.PROTECT, related_name="rater"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    consented_at = models.DateTimeField(null=True, blank=True)
    screened_out_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["link", "external_id"], name="one_participation_per_external_id")
        ]
        ordering = ["link", "created_at"]

    def __str__(self) -> str:
        return f"{self.external_id} on {self.link}"

    def time_on_task(self) -> timedelta | None:
        """Return the time from consent to completion, None until both happened."""
        if self.consented_at is None or self.completed_at is None:
            return None
        return self.completed_at - self.consented_at

    def status(self) -> str:
        """Return where the rater stands, in words for the payment sheet and the admin's table."""
        if self.completed_at is not None:
            return "completed"
        if self.screened_out_at is not None:
            return "screened out"
        if self.seat_id is not None:
            return "rating"
        return "screening" if self.consented_at is not None else "consent"


class CrowdScreening(models.Model):
    """One screening test a rater took: what was played, what they answered, and the verdict."""

    class Test(models.TextChoices):
        HEADPHONES = "headphones", "Headphone check (Woods et al. 2017)"
        DIGITS = "digits", "Hearing and environment check (digits in noise)"

    rater = models.ForeignKey(CrowdRater, on_delete=models.CASCADE, related_name="screenings")
    test = models.CharField(max_length=12, choices=Test.choices)
    trials = models.JSONField(help_text="What each trial played, with its answer")
    answers = models.JSONField(default=list, blank=True)
    correct = models.PositiveSmallIntegerField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    seed = models.BigIntegerField(help_text="Makes the trials' audio reproducible")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["rater", "started_at", "pk"]

    def __str__(self) -> str:
        return f"{self.test} screening of {self.rater_id}"

    def valid_at(self, now: datetime, hours: float) -> bool:
        """Return True when this is a passed screening recent enough to still qualify the rater."""
        return (
            bool(self.passed)
            and self.finished_at is not None
            and now - self.finished_at < timedelta(hours=hours)
        )
