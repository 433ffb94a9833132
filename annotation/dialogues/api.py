"""The dialogue API: list and read dialogues with their turns, import and export JSONL."""

from __future__ import annotations

from typing import Any, cast

from django.db.models import Prefetch, QuerySet
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.dialogues.access import (
    DIALOGUE_VIEWERS,
    dialogue_for_viewer,
    dialogues_for,
    may_manage_dialogues,
)
from annotation.dialogues.serializers import (
    DialogueImportReportSerializer,
    DialogueImportSerializer,
    DialogueSerializer,
)
from annotation.dialogues.transfer import export_dialogues, import_dialogues
from annotation.dialogues.views import MAX_IMPORT_BYTES
from annotation.recording.access import RECORDING_ADMINS
from annotation.recording.models import Dialogue, Item
from webapp.api.errors import ProblemSerializer, problem
from webapp.api.parsers import JsonLinesParser, RawFile
from webapp.models import User
from webapp.roles import HasRole


def turns_in_order() -> Prefetch[Any]:
    """Return the prefetch of a dialogue's turns in conversation order, with their actors."""
    return Prefetch("turns", queryset=Item.objects.order_by("turn").select_related("actor"))


def _user(request: Request) -> User:
    return cast(User, request.user)  # HasRole admitted only authenticated users


class DialogueListView(ListAPIView[Dialogue]):
    """Dialogues the caller may see (all for an admin, an actor's own), paged; an admin imports JSONL."""

    permission_classes = [HasRole]
    required_roles = DIALOGUE_VIEWERS
    serializer_class = DialogueSerializer
    parser_classes = [JsonLinesParser, MultiPartParser]

    def get_queryset(self) -> QuerySet[Dialogue]:
        return dialogues_for(_user(self.request)).prefetch_related(turns_in_order())

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "is_admin": may_manage_dialogues(_user(self.request))}

    @extend_schema(summary="List dialogues with their turns")
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Import dialogues (JSONL), all or nothing",
        description=(
            "One dialogue per line, as the import page takes. Every line is checked first; one "
            "problem means nothing is written and every problem is listed (`problems`: row, field, "
            "message). Send an `application/x-ndjson` body or a multipart `file`. Recording admins only."
        ),
        request={"application/x-ndjson": {"type": "string"}, "multipart/form-data": DialogueImportSerializer},
        responses={
            201: DialogueImportReportSerializer,
            200: DialogueImportReportSerializer,
            400: ProblemSerializer,
        },
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if not may_manage_dialogues(_user(request)):
            return problem("Only recording admins import dialogues.", status.HTTP_403_FORBIDDEN)
        if int(request.META.get("CONTENT_LENGTH") or 0) > MAX_IMPORT_BYTES + 64 * 1024:
            return problem(f"The upload is larger than {MAX_IMPORT_BYTES // 2**20} MB; split it.")
        if isinstance(request.data, RawFile):
            data = request.data.data
        elif (upload := request.FILES.get("file")) is not None:
            data = upload.read()
        else:
            return problem("Send a JSONL body (application/x-ndjson) or a multipart field “file”.")
        report = import_dialogues(data)
        problems = [{"row": e.row, "field": e.field, "message": str(e)} for e in report.errors]
        if not report.imported:
            return problem(f"Nothing was imported: {len(problems)} problem(s).", problems=problems)
        body = {**report.as_result(), "problems": []}
        body.pop("errors")
        return Response(body, status=status.HTTP_201_CREATED if report.created else status.HTTP_200_OK)


class DialogueDetailView(RetrieveAPIView[Dialogue]):
    """One dialogue with its turns (an actor's own, or any for an admin)."""

    permission_classes = [HasRole]
    required_roles = DIALOGUE_VIEWERS
    serializer_class = DialogueSerializer

    def get_object(self) -> Dialogue:
        found = dialogue_for_viewer(_user(self.request), self.kwargs["external_id"])
        return Dialogue.objects.prefetch_related(turns_in_order()).get(pk=found.pk)

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "is_admin": may_manage_dialogues(_user(self.request))}

    @extend_schema(summary="Read a dialogue", responses={200: DialogueSerializer, 404: ProblemSerializer})
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class DialogueExportView(APIView):
    """Every dialogue as JSONL, the import's shape (recording admins only)."""

    permission_classes = [HasRole]
    required_roles = RECORDING_ADMINS

    @extend_schema(
        summary="Export dialogues (JSONL)",
        responses={(200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR), 403: ProblemSerializer},
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        return StreamingHttpResponse(export_dialogues(), content_type="application/x-ndjson")
