"""The gold API (lead annotators and admins): one item with its current gold, the current gold of
every item, and the gold export as JSONL or parquet. The export module (pyarrow, datasets) is
imported only when an export is asked for, so listing gold stays light."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from django.db.models import QuerySet
from django.http import FileResponse, Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.gold.access import GOLD_KEEPERS, gold_hidden_from, gold_refusal
from annotation.gold.models import GoldReference
from annotation.labelling.access import as_read_by, with_reader_still_labelling
from annotation.recording.models import Item, Scenario, Split
from annotation.recording.serializers import ItemSerializer
from webapp.api.errors import ProblemSerializer
from webapp.api.rows import row_shape
from webapp.fixed_reads import INTEGER, TEXT, FixedRead
from webapp.lib.jsonlines import json_line
from webapp.models import User
from webapp.roles import HasRole
from webapp.storage import audio_url


class GoldSerializer(serializers.ModelSerializer[GoldReference]):
    """One version of an item's gold reference (perception and ToM documents as in the label schema)."""

    item = serializers.CharField(source="item.external_id", read_only=True)
    adjudicated_by = serializers.CharField(
        source="adjudicated_by.username", read_only=True, default=None, allow_null=True
    )
    dialogue = serializers.CharField(
        source="item.dialogue.external_id", read_only=True, default=None, allow_null=True
    )
    turn = serializers.IntegerField(source="item.turn", read_only=True, allow_null=True)

    class Meta:
        model = GoldReference
        fields = [
            "id",
            "item",
            "dialogue",
            "turn",
            "version",
            "perception",
            "tom",
            "cross_turn",
            "reference_response",
            "adjudicated_by",
            "fast_tracked",
            "imported",
            "note",
            "created_at",
        ]
        read_only_fields = fields


class ItemWithGoldSerializer(ItemSerializer):
    gold = serializers.SerializerMethodField()

    class Meta(ItemSerializer.Meta):
        fields = [*ItemSerializer.Meta.fields, "gold"]
        read_only_fields = fields

    @extend_schema_field(GoldSerializer(allow_null=True))
    def get_gold(self, item: Item) -> dict[str, Any] | None:
        """The item's current gold version, or null before adjudication."""
        gold = GoldReference.objects.current_of(item)
        return GoldSerializer(gold).data if gold is not None else None


def _filters(request: Request) -> dict[str, str]:
    chosen: dict[str, str] = {}
    for name, choices in (("scenario", Scenario.values), ("split", Split.values)):
        value = request.query_params.get(name, "")
        if value and value not in choices:
            raise ValidationError({name: f"“{value}” is not one of {', '.join(choices)}."})
        if value:
            chosen[name] = value
    return chosen


FILTER_PARAMETERS = [
    OpenApiParameter("scenario", enum=Scenario.values),
    OpenApiParameter("split", enum=Split.values),
]


class ItemDetailView(APIView):
    permission_classes = [HasRole]
    required_roles = GOLD_KEEPERS

    @extend_schema(
        summary="One item with its current gold",
        responses={200: ItemWithGoldSerializer, 403: ProblemSerializer, 404: ProblemSerializer},
    )
    def get(self, request: Request, external_id: str) -> Response:
        # The refusal's question rides on the item's read: the item, then its gold (issue 27).
        found = _ITEM_READ.read(user_id=request.user.pk, external_id=external_id)
        if not found:
            raise Http404("No Item matches the given query.")
        item = as_read_by(found[0], request.user)
        if (refusal := gold_refusal(request.user, item)) is not None:
            raise PermissionDenied(refusal)
        return Response(item_with_gold(item))


def _item_rows(user_id: int, external_id: str) -> QuerySet[Item]:
    items = with_reader_still_labelling(Item.objects.select_related("actor", "dialogue"), user_id)
    return items.filter(external_id=external_id).order_by()[:1]  # the id is unique


# The same SQL on every request but for the reader and the id, compiled once (`webapp.fixed_reads`).
_ITEM_READ: FixedRead[Item] = FixedRead(_item_rows, user_id=INTEGER, external_id=TEXT)


def item_with_gold(item: Item) -> dict[str, Any]:
    """Return ItemWithGoldSerializer's document of `item` (read with its actor and dialogue),
    written by `webapp.api.rows`: one query, for the current gold."""
    gold = GoldReference.objects.current_of(item)
    if gold is not None:
        gold.item = item  # the gold of this item: spares reading it again
    document = row_shape(ItemSerializer).document_of(item)
    document["gold"] = row_shape(GoldSerializer).document_of(gold) if gold is not None else None
    return document


class GoldListView(ListAPIView[GoldReference]):
    """The current gold version of every item that has one."""

    permission_classes = [HasRole]
    required_roles = GOLD_KEEPERS
    serializer_class = GoldSerializer

    def get_queryset(self) -> QuerySet[GoldReference]:
        gold = (
            GoldReference.objects.current()
            .exclude(item_id__in=gold_hidden_from(self.request.user))
            .select_related("item__dialogue", "adjudicated_by")
        )
        return gold.filter(**{f"item__{name}": value for name, value in _filters(self.request).items()})

    @extend_schema(summary="List current gold", parameters=FILTER_PARAMETERS)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class GoldExportView(APIView):
    """The gold export: the same rows as the gold page's export (annotation.gold.export)."""

    permission_classes = [HasRole]
    required_roles = GOLD_KEEPERS

    @extend_schema(
        summary="Export gold as JSONL or parquet",
        description=(
            "`as=jsonl` (default) streams one row per item, with `audio` the URL of its accepted "
            "recording; `as=parquet` returns the split's Hugging Face parquet file (audio embedded) "
            "and needs `split`."
        ),
        parameters=[*FILTER_PARAMETERS, OpenApiParameter("as", enum=["jsonl", "parquet"])],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR),
            (200, "application/vnd.apache.parquet"): OpenApiResponse(OpenApiTypes.BINARY),
            400: ProblemSerializer,
            404: ProblemSerializer,
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse | FileResponse:
        chosen = _filters(request)
        kind = request.query_params.get("as", "jsonl")
        if kind == "jsonl":
            return StreamingHttpResponse(
                _jsonl_lines(chosen, cast(User, request.user)), content_type="application/x-ndjson"
            )
        if kind != "parquet":
            raise ValidationError({"as": "choose jsonl or parquet"})
        if "split" not in chosen:
            raise ValidationError({"split": "a parquet export holds one split: choose it"})
        from annotation.gold.export import export_gold
        from annotation.gold.transfer.jobs import record_direct_export

        folder = Path(tempfile.mkdtemp(prefix="gold-export-"))
        summary = export_gold(
            folder,
            jsonl=False,
            parquet=True,
            scenario=chosen.get("scenario"),
            split=chosen["split"],
            viewer=cast(User, request.user),
        )
        if not summary.parquet_paths:
            shutil.rmtree(folder)
            raise NotFound("No item of this split has gold yet.")
        record_direct_export(
            by=cast(User, request.user),
            via="api parquet",
            take_ids=summary.take_ids,
            rows=summary.rows,
            parameters=dict(chosen),
        )
        handle = summary.parquet_paths[0].open("rb")
        # The open handle keeps the file readable once its folder is gone; nothing is left behind.
        shutil.rmtree(folder)
        return FileResponse(handle, as_attachment=True, filename=f"gold-{chosen['split']}.parquet")


def _jsonl_lines(chosen: dict[str, str], viewer: User) -> Iterator[str]:
    # Audio links are signed for the viewer who exported (webapp.storage.audio_url), short-lived.
    from annotation.gold.export import export_rows, gold_items
    from annotation.gold.transfer.jobs import record_direct_export

    items = gold_items(chosen.get("scenario"), chosen.get("split"), viewer=viewer)
    sent: list[int] = []
    sent_takes: list[int] = []
    try:
        for item in items.iterator(chunk_size=200):
            row = next(export_rows([item], audio_bytes=False, audio_link=lambda key: audio_url(key, viewer)))
            key = item.recording.audio_key if item.recording is not None else ""
            yield json_line({**row, "audio": audio_url(key, viewer) if key else None})
            sent.append(item.pk)
            if item.recording_id is not None:
                sent_takes.append(item.recording_id)
    finally:
        # The lineage manifest of what was sent, also when the client stopped reading part way.
        record_direct_export(
            by=viewer, via="api jsonl", take_ids=sent_takes, rows=len(sent), parameters=dict(chosen)
        )
