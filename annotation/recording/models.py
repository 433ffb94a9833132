"""Items (EchoEval scripts), the takes actors record of them, and the blind reviews of those takes."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Scenario(models.TextChoices):
    IMPLICIT = "implicit", "Implicit"
    AUDIO_DOMINANT = "audio-dominant", "Audio-dominant"
    HIGH_AROUSAL = "high-arousal", "High-arousal"
    MODALITY_CONFLICT = "modality-conflict", "Modality-conflict"
    EMOTION_SHIFT = "emotion-shift", "Emotion-shift"


class Emotion(models.TextChoices):
    HAPPY = "happy", "Happy"
    SAD = "sad", "Sad"
    ANGRY = "angry", "Angry"
    SURPRISE = "surprise", "Surprise"
    DISGUST = "disgust", "Disgust"
    FEAR = "fear", "Fear"
    NEUTRAL = "neutral", "Neutral"


class Intensity(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class Split(models.TextChoices):
    TEST = "test", "Test"
    DEV = "dev", "Dev"
    TRAIN = "train", "Train"


class Item(models.Model):
    """One EchoEval utterance: the script an actor performs and everything later attached to it."""

    class State(models.TextChoices):
        SCRIPTED = "scripted", "Scripted"
        RECORDING = "recording", "Recording"
        IN_REVIEW = "in_review", "In review"
        RECORDED = "recorded", "Recorded"
        ANNOTATING = "annotating", "Annotating"
        GOLD = "gold", "Gold"

    external_id = models.CharField(max_length=64, unique=True, help_text="Stable id, e.g. EE-0001")
    text = models.TextField()
    scenario = models.CharField(max_length=32, choices=Scenario.choices, db_index=True)
    target_emotion = models.CharField(max_length=16, choices=Emotion.choices)
    emotion_variant = models.CharField(max_length=64, blank=True, help_text="e.g. anxiety within fear")
    target_intensity = models.CharField(max_length=8, choices=Intensity.choices, default=Intensity.MEDIUM)
    instructions = models.TextField(blank=True)
    split = models.CharField(max_length=8, choices=Split.choices, default=Split.TEST, db_index=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.SCRIPTED, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_items",
        limit_choices_to={"groups__name": "Voice actor"},
    )
    recording = models.ForeignKey(
        "Take", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="Accepted take"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["external_id"]

    def __str__(self) -> str:
        return self.external_id


class Take(models.Model):
    """One recording of an item by its actor. Stored under random keys; reviewers never see who made it."""

    class Status(models.TextChoices):
        ANALYSING = "analysing", "Analysing"
        IN_REVIEW = "in_review", "In review"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"
        SUPERSEDED = "superseded", "Superseded"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="takes")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="takes")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ANALYSING, db_index=True)
    audio_key = models.CharField(max_length=200, help_text="16 kHz mono 16-bit WAV")
    original_key = models.CharField(max_length=200)
    original_format = models.CharField(max_length=32, blank=True)
    duration_seconds = models.FloatField(default=0.0)
    qc = models.JSONField(default=dict, blank=True)
    features = models.JSONField(default=dict, blank=True)
    contours = models.JSONField(
        default=dict, blank=True, help_text="Pitch and intensity contours for display (see acoustics)"
    )
    analysis_job = models.ForeignKey(
        "webapp.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"take {self.public_id} of {self.item_id}"


class RejectReason(models.TextChoices):
    WRONG_EMOTION = "wrong_emotion", "Wrong emotion"
    WRONG_INTENSITY = "wrong_intensity", "Wrong intensity"
    SCENARIO_NOT_CONVEYED = "scenario_not_conveyed", "Scenario not conveyed (e.g. sarcasm not audible)"
    MISREAD_SCRIPT = "misread_script", "Misread script"
    AUDIO_QUALITY = "audio_quality", "Audio quality"
    OTHER = "other", "Other"


class Review(models.Model):
    """One reviewer's blind verdict on one take."""

    class Verdict(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPT = "accept", "Accept"
        REJECT = "reject", "Reject"

    take = models.ForeignKey(Take, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    verdict = models.CharField(max_length=8, choices=Verdict.choices, default=Verdict.PENDING, db_index=True)
    reasons = models.JSONField(default=list, blank=True)
    comment = models.TextField(blank=True)
    assigned_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["take", "reviewer"], name="one_review_per_reviewer")]
        ordering = ["assigned_at"]

    def __str__(self) -> str:
        return f"review of {self.take_id} ({self.verdict})"
