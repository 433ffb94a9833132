"""JSON shapes of the recording API. Nothing a reviewer receives names or points to the actor."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.recording.conversation.history import conversation_so_far
from annotation.recording.item_import.rules import ITEM_FIELDS
from annotation.recording.models import Item, RejectReason, Review, Take
from annotation.recording.reports import speech_flags
from annotation.recording.reviews import MAX_COMMENT_CHARS, feedback_from
from webapp.storage import audio_url


class RecordingErrorSerializer(serializers.Serializer[Any]):
    detail = serializers.CharField(
        help_text="Why the request was refused, written for the person who sent it"
    )


class TakeUploadSerializer(serializers.Serializer[Any]):
    audio = serializers.FileField(
        help_text="The recording: WAV, MP3, FLAC, OGG, WebM/Opus or M4A, 0.5-60 s, at most 50 MB"
    )


class TakeFeedbackSerializer(serializers.Serializer[Any]):
    reasons = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="[reason label, how many reviewers gave it], most frequent first",
    )
    comments = serializers.ListField(child=serializers.CharField())


class TakeSerializer(serializers.ModelSerializer[Take]):
    """A take as its actor (or an admin) sees it."""

    id = serializers.UUIDField(source="public_id", read_only=True)
    item = serializers.CharField(source="item.external_id", read_only=True)
    status_label = serializers.CharField(source="get_status_display", read_only=True)
    audio_url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()
    feedback = serializers.SerializerMethodField()
    flags = serializers.SerializerMethodField()

    class Meta:
        model = Take
        fields = [
            "id",
            "item",
            "status",
            "status_label",
            "duration_seconds",
            "original_format",
            "created_at",
            "decided_at",
            "audio_url",
            "page_url",
            "feedback",
            "flagged_for_review",
            "flags",
        ]
        read_only_fields = fields

    def get_audio_url(self, take: Take) -> str:
        """A link only the requesting user can open (the view passes the request in the context)."""
        return audio_url(take.audio_key, self.context["request"].user)

    def get_page_url(self, take: Take) -> str:
        return reverse("annotation:take_detail", args=[take.public_id])

    @extend_schema_field(TakeFeedbackSerializer(allow_null=True))
    def get_feedback(self, take: Take) -> dict[str, Any] | None:
        """Reasons and comments once the take is decided (never who gave them)."""
        if take.status not in (Take.Status.ACCEPTED, Take.Status.REJECTED):
            return None
        feedback = feedback_from(take.reviews.all())
        return {"reasons": [list(pair) for pair in feedback.reasons], "comments": feedback.comments}

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_flags(self, take: Take) -> list[str]:
        """The speech check's findings in words for the actor (empty before the analysis)."""
        return speech_flags(take.qc)


class ReviewScriptSerializer(serializers.ModelSerializer[Item]):
    """What a reviewer needs to judge a take: the script and what the performance should convey."""

    class Meta:
        model = Item
        fields = [
            "external_id",
            "text",
            "scenario",
            "target_emotion",
            "emotion_variant",
            "target_intensity",
            "instructions",
            "turn",
        ]
        read_only_fields = fields


class EarlierTurnSerializer(serializers.Serializer[Any]):
    """A turn before the reviewed one in its dialogue: heard for context, never who recorded it."""

    turn = serializers.IntegerField()
    text = serializers.CharField()
    audio_url = serializers.CharField(help_text="The turn's standing take, signed for you; empty when none")
    reply = serializers.CharField(help_text="The reference assistant reply that followed")
    reply_audio_url = serializers.CharField()


class ReviewSerializer(serializers.ModelSerializer[Review]):
    """A review as its reviewer sees it: the script and the audio, nothing about who recorded it."""

    # The random public id, and the day of assignment only: sequential ids or exact times would
    # let a reviewer group the takes of one upload.
    id = serializers.UUIDField(source="public_id", read_only=True)
    assigned_on = serializers.SerializerMethodField()
    item = ReviewScriptSerializer(source="take.item", read_only=True)
    audio_url = serializers.SerializerMethodField()
    duration_seconds = serializers.FloatField(source="take.duration_seconds", read_only=True)
    page_url = serializers.SerializerMethodField()
    conversation_so_far = serializers.SerializerMethodField()

    class Meta:
        model = Review
        fields = [
            "id",
            "item",
            "conversation_so_far",
            "audio_url",
            "duration_seconds",
            "page_url",
            "assigned_on",
            "verdict",
            "reasons",
            "comment",
            "submitted_at",
            "played_at",
        ]
        read_only_fields = fields

    def get_audio_url(self, review: Review) -> str:
        return audio_url(review.take.audio_key, self.context["request"].user)

    def get_page_url(self, review: Review) -> str:
        return reverse("annotation:review_take", args=[review.public_id])

    @extend_schema_field(EarlierTurnSerializer(many=True))
    def get_conversation_so_far(self, review: Review) -> list[dict[str, Any]]:
        """The earlier turns of a dialogue turn's take, as the review page plays them ([] for an item)."""
        # The list view computes every review's history in one go (`conversations_so_far`).
        histories = self.context.get("histories")
        if histories is not None:
            history = histories[review.take.item_id]
        else:
            history = conversation_so_far(
                review.take.item, self.context["request"].user, own_takes_only=False
            )
        return EarlierTurnSerializer(history, many=True).data  # type: ignore[return-value]

    def get_assigned_on(self, review: Review) -> str:
        return timezone.localdate(review.assigned_at).isoformat()


class VerdictSerializer(serializers.Serializer[Any]):
    verdict = serializers.ChoiceField(choices=[Review.Verdict.ACCEPT, Review.Verdict.REJECT])
    reasons = serializers.ListField(
        child=serializers.ChoiceField(choices=RejectReason.choices),
        required=False,
        default=list,
        help_text="Required (at least one) for a reject",
    )
    comment = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=MAX_COMMENT_CHARS
    )


# --- Items and assignments (admins) -------------------------------------------------------------


class ItemSerializer(serializers.ModelSerializer[Item]):
    """An item (script) as an admin sees it; `actor` is the user name it is assigned to."""

    actor = serializers.CharField(source="actor.username", read_only=True, default=None, allow_null=True)

    class Meta:
        model = Item
        fields = [
            "id",
            *ITEM_FIELDS,  # what an import file gives an item, in the same order
            "state",
            "actor",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class ItemImportSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(required=False, help_text="A CSV or JSONL file, as on the import page")
    import_valid_rows = serializers.BooleanField(
        required=False, default=False, help_text="Import the valid rows even when others have problems"
    )


class RowErrorSerializer(serializers.Serializer[Any]):
    row = serializers.IntegerField(help_text="Row (CSV) or line (JSONL) number; 0 for the file as a whole")
    field = serializers.CharField()
    message = serializers.CharField()


class ItemImportReportSerializer(serializers.Serializer[Any]):
    format = serializers.CharField()
    rows_read = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    imported = serializers.BooleanField(help_text="False: nothing was written")
    problems = RowErrorSerializer(
        many=True, help_text="Every problem found; any one means nothing was written"
    )


class AssignSerializer(serializers.Serializer[Any]):
    items = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        max_length=100_000,
        help_text="Item external ids (a dialogue turn brings its whole dialogue)",
    )
    dialogues = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        max_length=20_000,
        help_text="Dialogue external ids: every turn of each goes to one actor",
    )
    actors = serializers.ListField(
        child=serializers.CharField(), allow_empty=False, help_text="User names of voice actors"
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("items") and not attrs.get("dialogues"):
            raise serializers.ValidationError("Name the items or the dialogues to assign.")
        return attrs


class AssignmentReportSerializer(serializers.Serializer[Any]):
    assigned = serializers.DictField(child=serializers.IntegerField(), help_text="actor: scripts given now")
    skipped = serializers.IntegerField(help_text="Items past recording, left with their actor")
