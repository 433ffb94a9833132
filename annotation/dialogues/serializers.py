"""The dialogue API's shapes: a dialogue with its turns (the planned trajectory and each turn's state)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from annotation.dialogues.records import TURN_KEYS
from annotation.recording.models import Dialogue, Item


class TurnSerializer(serializers.ModelSerializer[Item]):
    """One user turn: its script, the plan for it, and where its recording stands."""

    class Meta:
        model = Item
        # The JSONL turn's keys (one list: what is imported is what the API shows), and the state.
        fields = ["turn", "external_id", *TURN_KEYS, "state"]
        read_only_fields = fields


class DialogueSerializer(serializers.ModelSerializer[Dialogue]):
    """A dialogue and its turns in order; `actor` (who records every turn) for recording admins only."""

    turns = serializers.SerializerMethodField()
    actor = serializers.SerializerMethodField()

    class Meta:
        model = Dialogue
        fields = ["id", "external_id", "topic", "split", "voice", "actor", "turns", "created_at"]
        read_only_fields = fields

    def get_turns(self, dialogue: Dialogue) -> list[dict[str, Any]]:
        # Prefetched in turn order by the views (`turns_in_order`).
        return list(TurnSerializer(dialogue.turns.all(), many=True).data)

    def get_actor(self, dialogue: Dialogue) -> str | None:
        actor = next((turn.actor for turn in dialogue.turns.all() if turn.actor_id), None)
        return actor.username if actor is not None else None

    def to_representation(self, instance: Dialogue) -> dict[str, Any]:
        data = dict(super().to_representation(instance))
        if not self.context.get("is_admin"):
            data.pop("actor")  # an actor knows they record it; nobody else's name is theirs to see
        return data


class DialogueImportSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(help_text="A JSONL file, one dialogue per line, as on the import page")


class DialogueImportReportSerializer(serializers.Serializer[Any]):
    lines_read = serializers.IntegerField()
    created = serializers.IntegerField()
    replaced = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    imported = serializers.BooleanField()
    problems = serializers.ListField(child=serializers.JSONField())
