"""Demo data: users for every role and 25 EchoEval items with real synthetic speech (eSpeak NG).

Everything here is idempotent: running the seed twice updates rows in place and never duplicates.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from django.db import transaction
from django.utils import timezone

from annotation.recording.models import Item, Review, Take
from annotation.recording.takes import analyze_take
from webapp.jobs import JobReporter
from webapp.models import User
from webapp.roles import Role, grant_role
from webapp.storage import delete_media, new_media_key, save_media


@dataclass(frozen=True)
class DemoItem:
    external_id: str
    scenario: str
    emotion: str
    variant: str
    intensity: str
    text: str
    instructions: str
    pitch: int  # eSpeak pitch 0-100: higher for aroused or happy delivery
    rate_wpm: int  # eSpeak words per minute: slower for sad, faster for angry or anxious


DEMO_ITEMS: tuple[DemoItem, ...] = (
    # implicit: the words are calm, the need is implied
    DemoItem(
        "DEMO-001",
        "implicit",
        "sad",
        "loneliness",
        "medium",
        "I ate dinner by myself again tonight. It's fine, I guess.",
        "Flat and quiet; let the pause before 'I guess' carry it.",
        35,
        130,
    ),
    DemoItem(
        "DEMO-002",
        "implicit",
        "fear",
        "anxiety",
        "medium",
        "My results come back tomorrow morning. I keep checking my phone.",
        "Slightly hurried, restless.",
        55,
        185,
    ),
    DemoItem(
        "DEMO-003",
        "implicit",
        "sad",
        "disappointment",
        "low",
        "They picked someone else for the team. I mean, good for them.",
        "Understated, a little deflated.",
        40,
        150,
    ),
    DemoItem(
        "DEMO-004",
        "implicit",
        "happy",
        "pride",
        "medium",
        "I finally finished the marathon. My legs are still shaking.",
        "Warm, smiling voice.",
        65,
        175,
    ),
    DemoItem(
        "DEMO-005",
        "implicit",
        "neutral",
        "",
        "low",
        "I moved the meeting to Thursday, if that works for everyone.",
        "Plain and even.",
        50,
        165,
    ),
    # audio-dominant: neutral words, the voice carries the emotion
    DemoItem(
        "DEMO-006",
        "audio-dominant",
        "sad",
        "grief",
        "high",
        "The package arrived this afternoon.",
        "Heavy, slow, close to tears.",
        30,
        110,
    ),
    DemoItem(
        "DEMO-007",
        "audio-dominant",
        "angry",
        "irritation",
        "medium",
        "The train is running ten minutes late.",
        "Clipped and tense.",
        60,
        200,
    ),
    DemoItem(
        "DEMO-008",
        "audio-dominant",
        "happy",
        "excitement",
        "high",
        "We are going to the coast this weekend.",
        "Bright and fast.",
        75,
        210,
    ),
    DemoItem(
        "DEMO-009",
        "audio-dominant",
        "fear",
        "anxiety",
        "high",
        "The doctor wants to see me again on Monday.",
        "Shaky and breathy.",
        62,
        195,
    ),
    DemoItem(
        "DEMO-010",
        "audio-dominant",
        "surprise",
        "",
        "medium",
        "The office is closed today.",
        "Rising, caught off guard.",
        70,
        180,
    ),
    # high-arousal: strong emotion, high energy
    DemoItem(
        "DEMO-011",
        "high-arousal",
        "angry",
        "rage",
        "high",
        "I told them three times and they still lost my application!",
        "Loud and forceful.",
        68,
        220,
    ),
    DemoItem(
        "DEMO-012",
        "high-arousal",
        "happy",
        "joy",
        "high",
        "I got in! I actually got into the program!",
        "Shouting with joy.",
        85,
        215,
    ),
    DemoItem(
        "DEMO-013",
        "high-arousal",
        "fear",
        "panic",
        "high",
        "I can't find my daughter, she was right here a second ago!",
        "Panicked, breathless.",
        80,
        230,
    ),
    DemoItem(
        "DEMO-014",
        "high-arousal",
        "disgust",
        "",
        "high",
        "There was mould all over the bread they served us.",
        "Recoiling.",
        55,
        190,
    ),
    DemoItem(
        "DEMO-015",
        "high-arousal",
        "surprise",
        "shock",
        "high",
        "You sold the house without telling me?",
        "Stunned, rising sharply.",
        78,
        205,
    ),
    # modality-conflict: the words say one thing, the voice another (sarcasm, self-mockery)
    DemoItem(
        "DEMO-016",
        "modality-conflict",
        "angry",
        "sarcasm",
        "medium",
        "Oh great, another meeting that could have been an email.",
        "Sarcastic: drawn-out 'great', flat ending.",
        45,
        140,
    ),
    DemoItem(
        "DEMO-017",
        "modality-conflict",
        "sad",
        "self-mockery",
        "medium",
        "Wow, I'm really nailing this whole adult thing, aren't I.",
        "Self-mocking laugh in the voice, sad underneath.",
        42,
        150,
    ),
    DemoItem(
        "DEMO-018",
        "modality-conflict",
        "sad",
        "",
        "medium",
        "Sure, I'm totally fine with being left out again.",
        "Hurt under a cheerful surface.",
        40,
        145,
    ),
    DemoItem(
        "DEMO-019",
        "modality-conflict",
        "angry",
        "sarcasm",
        "high",
        "Thank you so much for reading my message. Really helpful.",
        "Icy politeness.",
        48,
        135,
    ),
    DemoItem(
        "DEMO-020",
        "modality-conflict",
        "fear",
        "",
        "low",
        "Ha, no, presenting to the whole board is no big deal.",
        "Nervous laugh.",
        60,
        190,
    ),
    # emotion-shift: the emotion changes within the utterance
    DemoItem(
        "DEMO-021",
        "emotion-shift",
        "sad",
        "relief to sadness",
        "medium",
        "I passed the exam! But my best friend didn't, and now we can't go together.",
        "Start bright, then fall after 'But'.",
        60,
        170,
    ),
    DemoItem(
        "DEMO-022",
        "emotion-shift",
        "happy",
        "worry to relief",
        "medium",
        "I was so scared when the phone rang. It was just my sister with good news.",
        "Tense first sentence, relieved second.",
        55,
        175,
    ),
    DemoItem(
        "DEMO-023",
        "emotion-shift",
        "angry",
        "calm to anger",
        "high",
        "I waited patiently for two hours. And then they said come back tomorrow!",
        "Calm, then exploding on the last clause.",
        58,
        185,
    ),
    DemoItem(
        "DEMO-024",
        "emotion-shift",
        "sad",
        "excitement to disappointment",
        "medium",
        "The concert tickets went on sale today. They sold out in one minute.",
        "Eager, then deflated.",
        62,
        180,
    ),
    DemoItem(
        "DEMO-025",
        "emotion-shift",
        "happy",
        "sadness to hope",
        "medium",
        "It has been a hard year since the accident. But today I walked without the cane.",
        "Low and slow, lifting at 'But'.",
        45,
        150,
    ),
)

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

# How far the demo has progressed per item: recorded items have an accepted take, in-review items a
# pending one, the rest wait for the actor. Gives every later page real data to show.
RECORDED_IDS = {f"DEMO-{n:03d}" for n in (1, 2, 3, 6, 7, 8, 11, 12, 16, 17, 21, 22)}
IN_REVIEW_IDS = {f"DEMO-{n:03d}" for n in (4, 9, 13, 18, 23)}


def seed_users() -> dict[str, str]:
    """Create the demo users; return {username: password} for those created now (printed once)."""
    created: dict[str, str] = {}
    for username, role, display_name in DEMO_USERS:
        user = User.objects.filter(username=username).first()
        if user is None:
            password = secrets.token_urlsafe(9)
            user = User.objects.create_user(username=username, password=password, display_name=display_name)
            created[username] = password
        grant_role(user, role)
        if role == Role.ADMIN and not user.is_superuser:
            user.is_superuser = True
            user.save(update_fields=["is_superuser"])
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
            audio_key=key,
            original_key=key,
            original_format="wav",
            duration_seconds=duration,
            status=Take.Status.IN_REVIEW,
        )
    else:
        old_keys = tuple({take.audio_key, take.original_key})
        take.audio_key, take.original_key, take.duration_seconds = key, key, duration
        take.qc, take.features, take.contours = {}, {}, {}
        take.save(
            update_fields=["audio_key", "original_key", "duration_seconds", "qc", "features", "contours"]
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


def resynthesize_demo_audio(progress: Callable[[float, str], None]) -> int:
    """Synthesise every demo take's speech again; return how many takes were rewritten."""
    by_id = {demo.external_id: demo for demo in DEMO_ITEMS}
    takes = list(Take.objects.filter(item__external_id__in=by_id).select_related("item", "actor"))
    for index, take in enumerate(takes):
        store_demo_take(take.item, take.actor, by_id[take.item.external_id])
        progress((index + 1) / len(takes), f"Synthesised {take.item.external_id} ({index + 1}/{len(takes)})")
    return len(takes)
