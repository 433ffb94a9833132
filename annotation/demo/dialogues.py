"""Demo dialogues: three five-turn conversations whose user emotions evolve, one eSpeak NG voice each.

The first two are recorded whole (every turn's synthetic take accepted by three reviewers), so
annotation, gold and outputs can work on them turn by turn; the third is assigned to the demo
actor and waits to be recorded turn by turn, hearing the earlier turns. Idempotent, like the rest.

Hook for the labelling side: `RECORDED_DIALOGUES` names the dialogues whose turns are RECORDED
(items `DEMO-DLG-1.t1` ... `.t5`, through `Dialogue.turn_external_id`), ready for annotations and gold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from django.db import transaction
from django.utils import timezone

from annotation.demo.recording import _SilentProgress
from annotation.recording.consent.models import ConsentRecord
from annotation.recording.models import Dialogue, Item, Review, Split, Take
from annotation.recording.takes import analyze_take
from webapp.jobs import JobReporter
from webapp.models import User
from webapp.storage import new_media_key, save_media


@dataclass(frozen=True)
class DemoTurn:
    text: str
    scenario: str
    emotion: str
    intensity: str
    strategy: str  # the strategy the plan expects of the assistant's reply
    reply: str  # the reference reply (voiced for the next turns' context)
    pitch: int  # eSpeak prosody carrying the emotion
    rate_wpm: int


@dataclass(frozen=True)
class DemoDialogue:
    external_id: str
    topic: str
    voice: str  # eSpeak NG voice: one user voice for every turn (speaker consistency)
    turns: tuple[DemoTurn, ...]


DEMO_DIALOGUES: tuple[DemoDialogue, ...] = (
    DemoDialogue(
        "DEMO-DLG-1",
        "losing a job",
        "en-us+f3",
        (
            DemoTurn(
                "They let me go this morning. Just like that.",
                "implicit",
                "sad",
                "medium",
                "emotional-validation",
                "I'm so sorry. That is a real shock to take in.",
                35,
                130,
            ),
            DemoTurn(
                "Twelve years, and they walked me out with a box!",
                "high-arousal",
                "angry",
                "high",
                "reflection-of-feelings",
                "Twelve years deserves far better than that. Of course you're angry.",
                75,
                210,
            ),
            DemoTurn(
                "What if nobody hires someone my age?",
                "implicit",
                "fear",
                "medium",
                "reassurance",
                "That worry makes sense. Your experience counts for a lot.",
                55,
                185,
            ),
            DemoTurn(
                "My old manager just called about a job at her new company.",
                "emotion-shift",
                "surprise",
                "medium",
                "questioning",
                "Oh, that's unexpected! How do you feel about it?",
                80,
                200,
            ),
            DemoTurn(
                "Maybe this is the push I needed.",
                "implicit",
                "happy",
                "low",
                "cognitive-reframing",
                "It sounds like a door is opening. I'm glad for you.",
                65,
                170,
            ),
        ),
    ),
    DemoDialogue(
        "DEMO-DLG-2",
        "moving to a new city",
        "en-gb",
        (
            DemoTurn(
                "The boxes are everywhere and I don't know a single person here.",
                "implicit",
                "sad",
                "low",
                "emotional-validation",
                "Starting over alone is hard, even when you chose it.",
                40,
                150,
            ),
            DemoTurn(
                "Great. The landlord says the heating won't be fixed for a month.",
                "modality-conflict",
                "angry",
                "medium",
                "reflection-of-feelings",
                "A month without heating? That's really frustrating.",
                45,
                170,
            ),
            DemoTurn(
                "I heard footsteps outside my door at two in the morning.",
                "high-arousal",
                "fear",
                "high",
                "reassurance",
                "That sounds frightening. Are you safe now?",
                70,
                220,
            ),
            DemoTurn(
                "It was only my neighbour. She brought me soup today.",
                "emotion-shift",
                "surprise",
                "low",
                "questioning",
                "What a kind surprise! What is she like?",
                70,
                180,
            ),
            DemoTurn(
                "We're having dinner on Friday. I think I'll like it here.",
                "implicit",
                "happy",
                "medium",
                "suggestions-guidance",
                "That's lovely. Friday could be the start of a friendship.",
                70,
                175,
            ),
        ),
    ),
    DemoDialogue(
        "DEMO-DLG-3",
        "an exam result",
        "en+m3",
        (
            DemoTurn(
                "The results go online at nine and I feel sick.",
                "implicit",
                "fear",
                "medium",
                "reassurance",
                "Waiting is the worst part. Breathe; you've done the work.",
                55,
                190,
            ),
            DemoTurn(
                "I failed the statistics paper.",
                "audio-dominant",
                "sad",
                "high",
                "emotional-validation",
                "I'm sorry. That hurts, especially after so much effort.",
                30,
                120,
            ),
            DemoTurn(
                "The marker says I got the method right but mixed up two tables!",
                "high-arousal",
                "angry",
                "high",
                "reflection-of-feelings",
                "So close, and lost on a slip. No wonder you're furious.",
                75,
                215,
            ),
            DemoTurn(
                "Wait, there's a resit in three weeks.",
                "emotion-shift",
                "surprise",
                "medium",
                "information",
                "Three weeks is time enough to fix a slip like that.",
                75,
                195,
            ),
            DemoTurn(
                "Okay. I can do this.",
                "implicit",
                "happy",
                "low",
                "cognitive-reframing",
                "You can. You already know the method.",
                60,
                165,
            ),
        ),
    ),
)
RECORDED_DIALOGUES = ("DEMO-DLG-1", "DEMO-DLG-2")
DEMO_DIALOGUE_ACTOR = "actor"


def seed_dialogues() -> int:
    """Create or update the demo dialogues (turns, accepted takes); return how many exist."""
    actor = User.objects.get(username=DEMO_DIALOGUE_ACTOR)
    reviewers = list(
        User.objects.filter(username__in=["reviewer1", "reviewer2", "reviewer3"]).order_by("username")
    )
    for demo in DEMO_DIALOGUES:
        with transaction.atomic():
            dialogue, _ = Dialogue.objects.update_or_create(
                external_id=demo.external_id,
                defaults={"topic": demo.topic, "voice": demo.voice, "split": Split.TEST},
            )
            for number, turn in enumerate(demo.turns, start=1):
                item = _seed_turn(dialogue, number, turn, actor)
                if demo.external_id in RECORDED_DIALOGUES and item.recording_id is None:
                    _accept_synthetic_take(item, actor, reviewers, turn, demo.voice)
    return Dialogue.objects.filter(external_id__in=[demo.external_id for demo in DEMO_DIALOGUES]).count()


def _seed_turn(dialogue: Dialogue, number: int, turn: DemoTurn, actor: User) -> Item:
    item, _ = Item.objects.get_or_create(
        external_id=Dialogue.turn_external_id(dialogue.external_id, number),
        defaults={"dialogue": dialogue, "turn": number, "text": turn.text},
    )
    item.dialogue, item.turn, item.actor, item.split = dialogue, number, actor, dialogue.split
    if item.state in (Item.State.SCRIPTED, Item.State.RECORDING):
        # Its script may still change (nobody has recorded it); a recorded one stays as it was.
        item.text, item.scenario, item.target_emotion = turn.text, turn.scenario, turn.emotion
        item.target_intensity, item.expected_strategy, item.reference_reply = (
            turn.intensity,
            turn.strategy,
            turn.reply,
        )
        item.state = Item.State.RECORDING
    item.save()
    return item


def _accept_synthetic_take(
    item: Item, actor: User, reviewers: list[User], turn: DemoTurn, voice: str
) -> None:
    from annotation.audio.synthesis import synthesize, to_wav_bytes
    from annotation.audio.upload import normalise_upload

    speech = synthesize(turn.text, rate_wpm=turn.rate_wpm, pitch=turn.pitch, voice=voice)
    audio = normalise_upload(to_wav_bytes(speech.samples, speech.sample_rate), "demo.wav")
    key = save_media(new_media_key("take", "wav"), audio.wav_bytes)
    take = Take.objects.create(
        item=item,
        actor=actor,
        consent=ConsentRecord.objects.in_force_for(actor.pk),
        audio_key=key,
        original_key=key,
        original_format="wav",
        duration_seconds=audio.duration_seconds,
        status=Take.Status.ACCEPTED,
        decided_at=timezone.now(),
    )
    for reviewer in reviewers:
        Review.objects.create(
            take=take, reviewer=reviewer, verdict=Review.Verdict.ACCEPT, submitted_at=timezone.now()
        )
    # Measured like an uploaded take, so the workbench shows its pitch and energy contours.
    analyze_take(take.pk, cast(JobReporter, _SilentProgress()))
    item.state, item.recording = Item.State.RECORDED, take
    item.save(update_fields=["state", "recording", "updated_at"])
