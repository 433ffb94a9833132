"""Workflows of a crowd study: open it, admit a rater, screen them, give them a seat, finish.

Each function with side effects is one workflow in a transaction, with the race it prevents named.
Who may reach what is in `crowd.access`; the pages in `crowd.views`.
"""

from __future__ import annotations

import enum
import random
import secrets
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.studies.creation.comparisons import place_parts
from evaluation.studies.creation.items import assign_in_plan_order
from evaluation.studies.crowd import digits, headphones
from evaluation.studies.crowd.models import CrowdLink, CrowdRater, CrowdScreening, CrowdSeat
from evaluation.studies.crowd.platforms import Entry, Platform
from evaluation.studies.design import Stimulus, StimulusKind, StudyDesignError, plan_study
from evaluation.studies.models import Study, StudyAssignment, StudyRater, StudyStimulus
from webapp.db import compare_and_set
from webapp.models import User

SCREENS = (CrowdScreening.Test.HEADPHONES, CrowdScreening.Test.DIGITS)


class Stage(enum.StrEnum):
    """Where a crowd rater is in the study; the step page shows the page of their stage."""

    CONSENT = "consent"
    HEADPHONES = CrowdScreening.Test.HEADPHONES.value
    DIGITS = CrowdScreening.Test.DIGITS.value
    RATING = "rating"
    FULL = "full"
    SCREENED_OUT = "screened_out"
    DONE = "done"


def open_to_crowd(
    study: Study,
    seats: int,
    platform: Platform,
    *,
    completion_url: str = "",
    screened_out_url: str = "",
    bonus: Decimal = Decimal(0),
    requests_per_minute: int = 120,
    ratings_per_output: int | None = None,
) -> CrowdLink:
    """Open a study to `seats` external raters through one link of `platform`.

    Each seat is a placeholder user (no password, no role, inactive: it can never log in) planned
    like an invited evaluator (`design.plan_study` over the study's own stimuli: practice first,
    every rated stimulus `ratings_per_output` more times over the seats (the study's own number
    unless given: crowd studies often want many more), gold and traps mixed in), so a rater who
    claims it gets a ready queue. In a comparison study the planned stimuli are its trials (not the
    samples they play), and each seat gets its slots as an evaluator would (`place_parts`: pairs
    counterbalanced over the seats, MUSHRA conditions shuffled).
    """
    per_output = ratings_per_output or study.ratings_per_output
    if seats < per_output:
        raise StudyDesignError(f"{per_output} ratings per output need at least {per_output} seats")
    # One transaction: a rater must never claim a seat whose queue is half written.
    with transaction.atomic():
        if CrowdLink.objects.select_for_update().filter(study=study).exists():
            raise StudyDesignError("this study is already open to external raters")
        link = CrowdLink.objects.create(
            study=study,
            platform=platform,
            completion_url=completion_url,
            screened_out_url=screened_out_url,
            bonus=bonus,
            requests_per_minute=requests_per_minute,
        )
        unusable = make_password(None)
        users = User.objects.bulk_create(
            User(username=f"crowd-{study.pk}-{link.pk}-{n:04d}", password=unusable, is_active=False)
            for n in range(seats)
        )
        CrowdSeat.objects.bulk_create(CrowdSeat(study=study, user=user) for user in users)
        StudyRater.objects.bulk_create(StudyRater(study=study, evaluator=user) for user in users)
        stimuli = list(
            study.stimuli.filter(parts__isnull=False).distinct()
            if study.is_comparison
            else study.stimuli.all()
        )
        by_kind: dict[str, list[Stimulus]] = {}
        for stimulus in stimuli:
            kind = cast(StimulusKind, stimulus.kind)
            by_kind.setdefault(kind, []).append(Stimulus(str(stimulus.pk), str(stimulus.item_id), kind))
        plan = plan_study(
            by_kind.get(StudyStimulus.Kind.RATED, []),
            [str(user.pk) for user in users],
            per_output,
            quality_checks=[
                *by_kind.get(StudyStimulus.Kind.GOLD, []),
                *by_kind.get(StudyStimulus.Kind.TRAP, []),
            ],
            training=by_kind.get(StudyStimulus.Kind.TRAINING, []),
            seed=study.seed + link.pk,
        )
        assign_in_plan_order(study, plan, {str(stimulus.pk): stimulus for stimulus in stimuli})
        if study.is_comparison:
            place_parts(study, random.Random(study.seed + link.pk), [user.pk for user in users])
    return link


def enter(link: CrowdLink, entry: Entry) -> CrowdRater:
    """Return the link's rater for this external id, admitting them on their first arrival.

    One external id is one rater for the whole study: coming back (another tab, the platform's
    link again) finds the same row. Two first arrivals at once both try to insert; the unique
    constraint lets one in and the other reads it.
    """
    existing = CrowdRater.objects.filter(link=link, external_id=entry.external_id).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return CrowdRater.objects.create(
                link=link,
                external_id=entry.external_id,
                platform_study=entry.platform_study,
                platform_session=entry.platform_session,
            )
    except IntegrityError:
        return CrowdRater.objects.get(link=link, external_id=entry.external_id)


def give_consent(rater: CrowdRater, now: datetime | None = None) -> None:
    """Record the rater's consent; the first time stays (two tabs may both send it)."""
    rater.consented_at = rater.consented_at or now or timezone.now()
    compare_and_set(
        CrowdRater.objects.filter(pk=rater.pk, consented_at__isnull=True), consented_at=rater.consented_at
    )


def needed_screen(rater: CrowdRater, now: datetime) -> CrowdScreening.Test | None:
    """Return the first screen the rater must (re)take now, None while both still qualify them
    (a pass lasts CROWD_QUALIFICATION_HOURS)."""
    hours = settings.CROWD_QUALIFICATION_HOURS
    latest: dict[str, CrowdScreening] = {}
    for screening in rater.screenings.filter(finished_at__isnull=False).order_by("finished_at", "pk"):
        latest[screening.test] = screening
    for test in SCREENS:
        if test not in latest or not latest[test].valid_at(now, hours):
            return test
    return None


def stage_of(rater: CrowdRater, now: datetime | None = None) -> Stage:
    """Return the page the rater is at, claiming a seat for a newly qualified rater."""
    now = now or timezone.now()
    if rater.completed_at is not None:
        return Stage.DONE
    if rater.screened_out_at is not None:
        return Stage.SCREENED_OUT
    if rater.consented_at is None:
        return Stage.CONSENT
    screen = needed_screen(rater, now)
    if screen is not None:
        return Stage(screen)
    if rater.seat_id is None and claim_seat(rater) is None:
        return Stage.FULL
    if finish_if_done(rater, now):
        return Stage.DONE
    return Stage.RATING


def screening_for(rater: CrowdRater, test: CrowdScreening.Test) -> CrowdScreening:
    """Return the rater's open screening of `test`, starting one (with fresh random trials) if none."""
    with transaction.atomic():
        # Locked: two tabs opening the screen at once must get the same trials, not two sets.
        CrowdRater.objects.select_for_update().get(pk=rater.pk)
        open_one = rater.screenings.filter(test=test, finished_at__isnull=True).first()
        if open_one is not None:
            return open_one
        seed = secrets.randbits(31)
        rng = random.Random(seed)
        trials: list[Any]
        if test == CrowdScreening.Test.HEADPHONES:
            trials = [list(trial.tones) for trial in headphones.plan_trials(rng)]
        else:
            trials = [{"digits": list(t.digits), "snr_db": t.snr_db} for t in digits.plan_triplets(rng)]
        return CrowdScreening.objects.create(rater=rater, test=test, trials=trials, seed=seed)


def headphone_trials(screening: CrowdScreening) -> list[headphones.HeadphoneTrial]:
    """Return a headphone screening's trials as planned."""
    return [headphones.HeadphoneTrial(tuple(tones)) for tones in screening.trials]


def digit_triplets(screening: CrowdScreening) -> list[digits.Triplet]:
    """Return a digits screening's triplets as planned."""
    return [digits.Triplet(tuple(t["digits"]), float(t["snr_db"])) for t in screening.trials]


def grade_screening(screening_id: int, answers: Sequence[str], now: datetime | None = None) -> CrowdScreening:
    """Score the rater's answers; a fail screens them out for good. A second submission of the
    same screening (a double click, another tab) changes nothing and returns the first verdict."""
    now = now or timezone.now()
    with transaction.atomic():
        screening = CrowdScreening.objects.select_for_update().get(pk=screening_id)
        if screening.finished_at is not None:
            return screening
        if screening.test == CrowdScreening.Test.HEADPHONES:
            trials = headphone_trials(screening)
            chosen = [int(answer) if answer.isdigit() else None for answer in answers]
            correct = headphones.score(trials, chosen)
            passed = headphones.passed(correct)
        else:
            triplets = digit_triplets(screening)
            correct = digits.score(triplets, answers)
            passed = digits.passed(correct)
        screening.answers = list(answers)
        screening.correct, screening.passed, screening.finished_at = correct, passed, now
        screening.save(update_fields=["answers", "correct", "passed", "finished_at"])
        if not passed:
            compare_and_set(
                CrowdRater.objects.filter(pk=screening.rater_id, screened_out_at__isnull=True),
                screened_out_at=now,
            )
    return screening


def claim_seat(rater: CrowdRater) -> CrowdSeat | None:
    """Give a qualified rater a free seat of the study (None when every seat is taken)."""
    with transaction.atomic():
        locked = CrowdRater.objects.select_for_update().select_related("link").get(pk=rater.pk)
        if locked.seat_id is None:
            # SKIP LOCKED: hundreds of raters qualifying at once each take a different free seat
            # instead of queueing on the first one (the one-to-one constraint backs it up).
            seat = (
                CrowdSeat.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(study_id=locked.link.study_id, rater__isnull=True)
                .order_by("pk")
                .first()
            )
            if seat is None:
                return None
            locked.seat = seat
            locked.save(update_fields=["seat"])
    rater.seat = locked.seat
    return rater.seat


def finish_if_done(rater: CrowdRater, now: datetime | None = None) -> bool:
    """Mark the rater completed once their seat's every assignment is submitted; return whether done."""
    if rater.completed_at is not None:
        return True
    if (
        rater.seat is None
        or StudyAssignment.objects.filter(evaluator_id=rater.seat.user_id, submitted_at__isnull=True).exists()
    ):
        return False
    rater.completed_at = now or timezone.now()
    compare_and_set(
        CrowdRater.objects.filter(pk=rater.pk, completed_at__isnull=True), completed_at=rater.completed_at
    )
    return True
