"""The people and the work bench/concurrency.py sends at the server: seeded in-process on the bench database."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

ANNOTATORS, ANNOTATIONS_EACH = 50, 20
REVIEWERS, TAKES = 10, 40
GOLD_ITEMS = 40
# Two-tab races: each of these annotations is autosaved from two tabs at the same moment.
TAB_RACES = 200
# Faults: each fault's annotators keep saving and submitting their own annotations through it.
FAULT_ANNOTATORS, FAULT_ANNOTATIONS_EACH = 8, 6
FAULTS = ("database restart", "broker restart", "web worker killed", "task worker killed mid-job")


def perception(marker: str) -> dict[str, Any]:
    """A complete perception document for the seeded script, marked so a stored copy can be told apart."""
    from tests.annotation.labelling.support import perception as complete_perception

    return complete_perception(situation=marker)


def tom(marker: str) -> dict[str, Any]:
    from tests.annotation.labelling.support import tom as complete_tom

    return complete_tom(context=marker)


@dataclass
class Seeded:
    annotator_cookies: list[dict[str, str]]
    reviewer_cookies: list[dict[str, str]]
    lead_cookies: list[dict[str, str]]  # two leads, who fast-track the same items at the same moment
    gold_item_ids: list[int]
    tab_race_cookies: dict[int, dict[str, str]] = field(default_factory=dict)  # annotation -> its annotator
    fault_cookies: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # fault -> annotators


def seed() -> Seeded:
    """Create the people and the work (runs inside this process, on the bench database)."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from annotation.labelling.models import Annotation
    from annotation.recording.models import Item, Review, Take
    from tests.annotation.labelling.support import SCRIPT
    from webapp.models import User
    from webapp.roles import Role, grant_role

    def person(name: str, *roles: Role) -> User:
        user = User.objects.create_user(username=name, password=secrets.token_urlsafe(16))
        for role in roles:
            grant_role(user, role)
        return user

    def cookies_for(user: User) -> dict[str, str]:
        # A logged-in session made the way django.contrib.auth.login makes one, without the
        # login form (whose throttling would treat 61 logins in a second as an attack).
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]  # the password backend
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        return {settings.SESSION_COOKIE_NAME: session.session_key or "", settings.CSRF_COOKIE_NAME: "b" * 32}

    annotators = [person(f"annotator{n}", Role.ANNOTATOR) for n in range(ANNOTATORS)]
    reviewers = [person(f"reviewer{n}", Role.REVIEWER) for n in range(REVIEWERS)]
    admin = person("admin", Role.ADMIN, Role.LEAD_ANNOTATOR)
    second_lead = person("lead", Role.LEAD_ANNOTATOR)
    actor = person("actor", Role.VOICE_ACTOR)
    helpers = [person(f"helper{n}", Role.ANNOTATOR) for n in range(3)]

    features = {"pitch_level": "high", "energy_level": "normal", "rate_level": "low", "intonation": "falling"}

    def recorded(prefix: str, count: int, state: str, take_status: str) -> tuple[list[Item], list[Take]]:
        """`count` items of SCRIPT with one take each (their recording, once the take is accepted)."""
        fixed = {"text": SCRIPT, "scenario": "modality-conflict", "target_emotion": "angry", "state": state}
        items = Item.objects.bulk_create(
            [Item(external_id=f"{prefix}-{n:05d}", **fixed) for n in range(count)]
        )
        key = "audio/take/bench-{}.wav"
        takes = Take.objects.bulk_create(
            Take(item=item, actor=actor, status=take_status, audio_key=key.format(item.pk),
                 original_key=key.format(item.pk), duration_seconds=2.0, features=features)
            for item in items
        )  # fmt: skip
        if take_status == Take.Status.ACCEPTED:
            for item, take in zip(items, takes, strict=True):
                item.recording = take
            Item.objects.bulk_update(items, ["recording"])
        return items, takes

    def annotations(items: list[Item], who: Callable[[int], list[User]], status: str, marker: str) -> None:
        Annotation.objects.bulk_create(
            Annotation(item=item, annotator=user, status=status, perception=perception(marker), tom=tom(marker),
                       version=1)
            for index, item in enumerate(items)
            for user in who(index)
        )  # fmt: skip

    labelled, _ = recorded("LAB", ANNOTATORS * ANNOTATIONS_EACH, Item.State.ANNOTATING, Take.Status.ACCEPTED)
    annotations(
        labelled, lambda index: [annotators[index // ANNOTATIONS_EACH]], Annotation.Status.DRAFT, "start"
    )
    _, in_review = recorded("REV", TAKES, Item.State.IN_REVIEW, Take.Status.IN_REVIEW)
    Review.objects.bulk_create(
        Review(take=take, reviewer=reviewers[(index + k * 3) % REVIEWERS])
        for index, take in enumerate(in_review)
        for k in range(3)
    )
    agreeing, _ = recorded("GLD", GOLD_ITEMS, Item.State.ANNOTATING, Take.Status.ACCEPTED)
    annotations(agreeing, lambda index: helpers, Annotation.Status.SUBMITTED, "agreed")
    racers = [person(f"tabs{n}", Role.ANNOTATOR) for n in range(10)]
    raced, _ = recorded("TAB", TAB_RACES, Item.State.ANNOTATING, Take.Status.ACCEPTED)
    annotations(raced, lambda index: [racers[index % len(racers)]], Annotation.Status.DRAFT, "start")
    fault_people = {
        fault: [person(f"fault{f}-{n}", Role.ANNOTATOR) for n in range(FAULT_ANNOTATORS)]
        for f, fault in enumerate(FAULTS)
    }
    everyone = [user for group in fault_people.values() for user in group]
    per_fault, _ = recorded(
        "FLT", len(everyone) * FAULT_ANNOTATIONS_EACH, Item.State.ANNOTATING, Take.Status.ACCEPTED
    )
    annotations(
        per_fault, lambda index: [everyone[index // FAULT_ANNOTATIONS_EACH]], Annotation.Status.DRAFT, "start"
    )
    racer_cookies = {user.pk: cookies_for(user) for user in racers}
    return Seeded(
        annotator_cookies=[cookies_for(user) for user in annotators],
        reviewer_cookies=[cookies_for(user) for user in reviewers],
        lead_cookies=[cookies_for(admin), cookies_for(second_lead)],
        gold_item_ids=[item.pk for item in agreeing],
        tab_race_cookies={
            pk: racer_cookies[annotator]
            for pk, annotator in Annotation.objects.filter(item__in=raced).values_list("pk", "annotator")
        },
        fault_cookies={fault: [cookies_for(user) for user in group] for fault, group in fault_people.items()},
    )


def client(base_url: str, cookies: dict[str, str]) -> httpx.Client:
    return httpx.Client(
        base_url=base_url,
        cookies=cookies,
        headers={"X-CSRFToken": "b" * 32, "Referer": base_url + "/"},
        timeout=60,
    )


def rows_of(response: httpx.Response) -> list[dict[str, Any]]:
    if response.status_code != 200:
        raise SystemExit(f"{response.request.url} answered {response.status_code}: {response.text[:300]}")
    listing = response.json()
    return listing["results"] if isinstance(listing, dict) else listing
