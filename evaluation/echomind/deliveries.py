"""Workflows on the taxonomy and delivery sets: import the taxonomy, create a case's deliveries as
Items for actors to record (the attribute as the instruction), mix environment deliveries."""

from __future__ import annotations

import io
from collections.abc import Sequence

from django.db import transaction
from pydub import AudioSegment

from annotation.audio.upload import UploadLimits, normalise_upload
from annotation.recording.models import Emotion, Item, Scenario, Split, Take
from annotation.recording.takes import record_take
from evaluation.echomind import taxonomy
from evaluation.echomind.models import Delivery, DeliverySet, VocalAttribute
from evaluation.echomind.scoring import ALTERNATIVE, NEUTRAL, TARGET
from webapp.models import User
from webapp.storage import read_media

# An emotion attribute also sets the item's target emotion, so EchoEval's pages read it right.
EMOTION_OF = {
    "happy_tone": Emotion.HAPPY,
    "sad_tone": Emotion.SAD,
    "surprised_tone": Emotion.SURPRISE,
    "angry_tone": Emotion.ANGRY,
    "fearful_tone": Emotion.FEAR,
    "disgusted_tone": Emotion.DISGUST,
}
REVIEW_QUESTION = "Does this delivery carry its attribute, and nothing else audible?"


class DeliveryProblem(ValueError):
    """A delivery set or mix that cannot be made; the message is for the admin."""


def ensure_default_taxonomy() -> None:
    """Give an empty taxonomy EchoMind's 45 attributes (a lab's own taxonomy is left alone)."""
    if not VocalAttribute.objects.exists():
        import_taxonomy(taxonomy.DEFAULT_TAXONOMY)


def import_taxonomy(attributes: Sequence[taxonomy.Attribute]) -> tuple[int, int]:
    """Create or update attributes by code, in the given order; return (created, updated)."""
    created = updated = 0
    start = VocalAttribute.objects.count()
    with transaction.atomic():
        for offset, attribute in enumerate(attributes):
            _, made = VocalAttribute.objects.update_or_create(
                code=attribute.code,
                defaults={"label": attribute.label, "coarse": attribute.coarse, "fine": attribute.fine},
                create_defaults={
                    "label": attribute.label,
                    "coarse": attribute.coarse,
                    "fine": attribute.fine,
                    "position": start + offset,
                },
            )
            created, updated = created + made, updated + (not made)
    return created, updated


def instruction(attribute: VocalAttribute | None) -> str:
    """Return what the actor is asked to do (and the reviewer checks) for one delivery."""
    if attribute is None:
        return "Neutral delivery: no emotion, no vocal effect, no background sound."
    return f"Deliver with: {attribute.label} ({attribute.coarse}, {attribute.fine})."


def create_delivery_set(
    *,
    case_id: str,
    script_type: str,
    topic: str,
    text: str,
    attribute: str,
    alternative: str,
    reference_replies: Sequence[str] = (),
    neutral: bool | None = None,
) -> DeliverySet:
    """Create a case and its deliveries (target, neutral unless a speaker attribute, alternative of
    the same fine dimension), each an Item waiting to be assigned and recorded; `neutral` True or
    False overrides the dimension's default (a release may record a speaker case neutrally too).

    The items are EchoMind's own set (`Split.ECHOMIND`), never one of EchoEval's splits."""
    target = VocalAttribute.objects.filter(code=attribute).first()
    other = VocalAttribute.objects.filter(code=alternative).first() if alternative else None
    if target is None:
        raise DeliveryProblem(f"{case_id}: no attribute {attribute!r} in the taxonomy")
    if alternative and (other is None or other.fine != target.fine or other.pk == target.pk):
        raise DeliveryProblem(f"{case_id}: the alternative must be another attribute of {target.fine}")
    roles: list[tuple[str, VocalAttribute | None]] = [(TARGET, target)]
    if taxonomy.has_neutral(target.coarse) if neutral is None else neutral:
        roles.append((NEUTRAL, None))
    if other is not None:
        roles.append((ALTERNATIVE, other))
    with transaction.atomic():
        case = DeliverySet.objects.create(
            case_id=case_id, script_type=script_type, topic=topic, text=text, attribute=target
        )
        for role, carried in roles:
            item = Item.objects.create(
                external_id=f"EM-{case_id}-{role}",
                text=text,
                scenario=Scenario.AUDIO_DOMINANT,
                split=Split.ECHOMIND,
                target_emotion=EMOTION_OF.get(carried.code if carried else "", Emotion.NEUTRAL),
                instructions=instruction(carried),
            )
            Delivery.objects.create(
                delivery_set=case,
                role=role,
                attribute=carried,
                item=item,
                reference_replies=list(reference_replies) if role == TARGET else [],
            )
    return case


def mixable_deliveries() -> list[Delivery]:
    """Return the environment deliveries still to be made (each by mixing, not by an actor): not
    recorded, and no mix of theirs waiting in review."""
    return list(
        Delivery.objects.filter(attribute__coarse=taxonomy.ENVIRONMENT, item__recording__isnull=True)
        .exclude(role=NEUTRAL)
        .exclude(item__state=Item.State.IN_REVIEW)
        .select_related("attribute", "item", "delivery_set")
        .order_by("delivery_set__case_id", "role")
    )


# A background clip is any readable audio file: short, quiet or loud clips are all fair backgrounds.
BACKGROUND_LIMITS = UploadLimits(
    max_bytes=512 * 1024 * 1024,
    min_seconds=0.1,
    max_seconds=3600.0,
    silence_peak_dbfs=-120.0,
    max_clipping_ratio=1.0,
)


def mix_environment_delivery(
    delivery: Delivery, background_audio: bytes, background: str, gain_db: float
) -> Take:
    """Record an environment delivery as its case's accepted neutral take with a background clip
    mixed in; the mix goes to blind review like any take, and the delivery remembers how it was made.

    The clip may be any format an actor may upload; raise AudioRejected when it cannot be read.
    """
    if delivery.attribute is None or delivery.attribute.coarse != taxonomy.ENVIRONMENT:
        raise DeliveryProblem("Only an environment delivery is made by mixing.")
    clip = normalise_upload(background_audio, background, limits=BACKGROUND_LIMITS).wav_bytes
    neutral = Delivery.objects.filter(delivery_set=delivery.delivery_set, role=NEUTRAL).select_related("item")
    source = next((d.item.recording for d in neutral if d.item.recording is not None), None)
    if source is None:
        raise DeliveryProblem("The case's neutral delivery has no accepted take yet.")
    actor = User.objects.get(pk=source.actor_id)
    with transaction.atomic():
        item = Item.objects.lock(delivery.item_id)
        if item.state in (Item.State.SCRIPTED, Item.State.RECORDING):
            item.actor, item.state = actor, Item.State.RECORDING
            item.save(update_fields=["actor", "state", "updated_at"])
    mixed = mix_background(read_media(source.audio_key), clip, gain_db)
    take = record_take(Item.objects.get(pk=delivery.item_id), actor, mixed, f"{background}.wav")
    delivery.mixed_from, delivery.background, delivery.background_gain_db = source, background, gain_db
    delivery.save(update_fields=["mixed_from", "background", "background_gain_db"])
    return take


# Mixing (pydub): 16 kHz mono 16-bit WAV in and out, the speech's length.
SAMPLE_RATE = 16_000


def _read(data: bytes) -> AudioSegment:
    return AudioSegment.from_file(io.BytesIO(data), format="wav").set_channels(1).set_frame_rate(SAMPLE_RATE)


def mix_background(speech_wav: bytes, background_wav: bytes, gain_db: float) -> bytes:
    """Return the speech with the background (looped to its length) added at `gain_db` relative to
    the background clip's own level (negative: quieter)."""
    speech = _read(speech_wav).set_sample_width(2)
    background = _read(background_wav).set_sample_width(2)
    if len(background) == 0:
        raise DeliveryProblem("The background clip is empty.")
    mixed = speech.overlay(background.apply_gain(gain_db), loop=True)
    out = io.BytesIO()
    mixed.export(out, format="wav")
    return out.getvalue()
