"""Demo data: users for every role and 25 EchoEval items with real synthetic speech (eSpeak NG).

Everything here is idempotent: running the seed twice updates rows in place and never duplicates.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import cast

from django.db import transaction
from django.utils import timezone

from annotation.demo.items import DEMO_ITEMS, IN_REVIEW_IDS, RECORDED_IDS, TRAIN_IDS, DemoItem
from annotation.recording.consent.models import SCOPES, ConsentRecord, ConsentText
from annotation.recording.models import Item, Review, Split, Take
from annotation.recording.takes import analyze_take
from webapp.jobs import JobReporter
from webapp.models import User
from webapp.roles import Role, grant_role
from webapp.storage import delete_media, new_media_key, save_media

DEMO_USERS: tuple[tuple[str, Role, str], ...] = (
    ("admin", Role.ADMIN, "Ada Admin"),
    ("actor", Role.VOICE_ACTOR, "Avery Actor"),
    ("actor2", Role.VOICE_ACTOR, "Blake Actor"),
    ("reviewer1", Role.REVIEWER, "Riley Reviewer"),
    ("reviewer2", Role.REVIEWER, "Robin Reviewer"),
    ("reviewer3", Role.REVIEWER, "Rowan Reviewer"),
    ("reviewer4", Role.REVIEWER, "Reese Reviewer"),
    ("annotator1", Role.ANNOTATOR, "Alex Annotator"),
    ("annotator2", Role.ANNOTATOR, "Sam Annotator"),
    ("annotator3", Role.ANNOTATOR, "Jo Annotator"),
    ("lead", Role.LEAD_ANNOTATOR, "Lee Lead"),
    ("evaluator1", Role.EVALUATOR, "Eve Evaluator"),
    ("evaluator2", Role.EVALUATOR, "Eli Evaluator"),
    ("evaluator3", Role.EVALUATOR, "Emery Evaluator"),
)


def seed_users() -> dict[str, str]:
    """Create the demo users; return {username: password} for those created now (printed once)."""
    created: dict[str, str] = {}
    for username, role, display_name in DEMO_USERS:
        user = User.objects.filter(username=username).first()
        if user is None:
            password = secrets.token_urlsafe(9)
            user = User.objects.create_user(username=username, password=password, display_name=display_name)
            created[username] = password
        # The demo admin is an Admin-role user, not a superuser: the role alone manages the studio.
        grant_role(user, role)
        if role == Role.VOICE_ACTOR and not ConsentRecord.objects.filter(person=user).exists():
            # The demo actors consented to every use (the consent page shows it and lets them withdraw).
            ConsentRecord.objects.create(
                person=user, text=ConsentText.current(), **dict.fromkeys(SCOPES, True)
            )
    return created


def synthesize_demo_wav(demo: DemoItem) -> tuple[bytes, float]:
    """Return 16 kHz mono WAV bytes of the item's script spoken by eSpeak NG, and its duration."""
    from annotation.audio.synthesis import synthesize, to_wav_bytes
    from annotation.audio.upload import normalise_upload

    speech = synthesize(demo.text, rate_wpm=demo.rate_wpm, pitch=demo.pitch)
    normalised = normalise_upload(to_wav_bytes(speech.samples, speech.sample_rate), "demo.wav")
    return normalised.wav_bytes, normalised.duration_seconds


def store_demo_take(item: Item, actor: User, demo: DemoItem) -> Take:
    """Synthesise the item's speech and store it as a take of the actor (replacing the old audio)."""
    wav, duration = synthesize_demo_wav(demo)
    take = Take.objects.filter(item=item, actor=actor).order_by("created_at").first()
    key = save_media(new_media_key("take", "wav"), wav)
    old_keys: tuple[str, ...] = ()
    if take is None:
        take = Take.objects.create(
            item=item,
            actor=actor,
            consent=ConsentRecord.objects.in_force_for(actor.pk),
            audio_key=key,
            original_key=key,
            original_format="wav",
            duration_seconds=duration,
            status=Take.Status.IN_REVIEW,
        )
    else:
        old_keys = tuple({take.audio_key, take.original_key})
        take.audio_key, take.original_key, take.duration_seconds = key, key, duration
        take.qc, take.features, take.contours, take.waveform = {}, {}, {}, None
        take.save(
            update_fields=[
                "audio_key",
                "original_key",
                "duration_seconds",
                "qc",
                "features",
                "contours",
                "waveform",
            ]
        )
    delete_media(*old_keys)
    # Demo takes skip the upload path, so measure them here: take pages and the annotation
    # workbench then show real pitch and energy contours.
    analyze_take(take.pk, cast(JobReporter, _SilentProgress()))
    return take


class _SilentProgress:
    """Stands in for a JobReporter when demo takes are analysed outside a job."""

    def progress(self, fraction: float, message: str = "", *, force: bool = False) -> None:
        return None


def seed_items(progress: Callable[[float, str], None] | None = None) -> int:
    """Create or update the 25 demo items with takes and reviews; return how many items exist."""
    actor = User.objects.get(username="actor")
    reviewers = list(
        User.objects.filter(username__in=["reviewer1", "reviewer2", "reviewer3"]).order_by("username")
    )
    for index, demo in enumerate(DEMO_ITEMS):
        with transaction.atomic():
            item, _ = Item.objects.update_or_create(
                external_id=demo.external_id,
                defaults={
                    "text": demo.text,
                    "scenario": demo.scenario,
                    "target_emotion": demo.emotion,
                    "emotion_variant": demo.variant,
                    "target_intensity": demo.intensity,
                    "instructions": demo.instructions,
                    "actor": actor,
                    "split": Split.TRAIN if demo.external_id in TRAIN_IDS else Split.TEST,
                },
            )
            if demo.external_id in RECORDED_IDS or demo.external_id in IN_REVIEW_IDS:
                existing = Take.objects.filter(item=item, actor=actor).order_by("created_at").first()
                take = existing or store_demo_take(item, actor, demo)
                accepted = demo.external_id in RECORDED_IDS
                for reviewer in reviewers:
                    Review.objects.update_or_create(
                        take=take,
                        reviewer=reviewer,
                        defaults={
                            "verdict": Review.Verdict.ACCEPT if accepted else Review.Verdict.PENDING,
                            "submitted_at": timezone.now() if accepted else None,
                        },
                    )
                take.status = Take.Status.ACCEPTED if accepted else Take.Status.IN_REVIEW
                take.save(update_fields=["status"])
                if accepted and item.state in (
                    Item.State.SCRIPTED,
                    Item.State.RECORDING,
                    Item.State.IN_REVIEW,
                ):
                    item.state, item.recording = Item.State.RECORDED, take
                elif not accepted:
                    item.state = Item.State.IN_REVIEW
            elif item.state == Item.State.SCRIPTED:
                item.state = Item.State.RECORDING
            item.save(update_fields=["state", "recording"])
        if progress:
            progress((index + 1) / len(DEMO_ITEMS), f"{demo.external_id} ready")
    return Item.objects.filter(external_id__startswith="DEMO-").count()


# The job that runs `resynthesize_demo_audio` (annotation.tasks), started from the admin dashboard.
RESYNTHESIS_JOB = "resynthesize_demo_audio"


def resynthesize_demo_audio(progress: Callable[[float, str], None]) -> int:
    """Synthesise every demo take's speech again; return how many takes were rewritten."""
    by_id = {demo.external_id: demo for demo in DEMO_ITEMS}
    takes = list(Take.objects.filter(item__external_id__in=by_id).select_related("item", "actor"))
    for index, take in enumerate(takes):
        store_demo_take(take.item, take.actor, by_id[take.item.external_id])
        progress((index + 1) / len(takes), f"Synthesised {take.item.external_id} ({index + 1}/{len(takes)})")
    return len(takes)
