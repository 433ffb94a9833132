"""The recording API: actors upload takes, reviewers fetch their blind reviews and send verdicts."""

from __future__ import annotations

import json
import uuid
from typing import Any, cast

from django.db.models import Q, QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListCreateAPIView
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audio.upload import AudioRejected, refuse_oversized
from annotation.recording.access import RECORDING_ADMINS, item_for_actor, own_takes, review_for_reviewer
from annotation.recording.conversation.history import conversations_so_far
from annotation.recording.items import assign_items, import_items
from annotation.recording.models import Item, Review, Scenario, Split
from annotation.recording.reviews import (
    PlaybackRequired,
    ReviewClosed,
    ReviewNotFound,
    ReviewProblem,
    present_reviews,
    record_playback,
    submit_verdict,
)
from annotation.recording.serializers import (
    AssignmentReportSerializer,
    AssignSerializer,
    ItemImportReportSerializer,
    ItemImportSerializer,
    ItemSerializer,
    RecordingErrorSerializer,
    ReviewSerializer,
    TakeSerializer,
    TakeUploadSerializer,
    VerdictSerializer,
)
from annotation.recording.takes import TakeNotAllowed, record_take, upload_limits
from annotation.recording.views import MAX_IMPORT_BYTES
from webapp.api.errors import ProblemSerializer, problem
from webapp.api.parsers import CsvParser, JsonLinesParser, RawFile
from webapp.api.rows import row_shape
from webapp.models import User
from webapp.roles import HasRole, Role


def _user(request: Request) -> User:
    # HasRole has admitted only authenticated users with the right role.
    return cast(User, request.user)


def _refused(reason: str, code: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return problem(reason, code)


def _first_error(errors: object, field: str = "") -> str:
    """Return the first message of a DRF error structure, prefixed with its field."""
    if isinstance(errors, dict):
        name, nested = next(iter(errors.items()))
        return _first_error(nested, field or str(name))
    if isinstance(errors, list):
        return _first_error(errors[0], field)
    return f"{field}: {errors}" if field else str(errors)


class ItemTakesView(APIView):
    """An actor's takes of one assigned script: list them, or upload a new one."""

    permission_classes = [HasRole]
    required_roles = (Role.VOICE_ACTOR,)
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="List my takes of an assigned script",
        responses={
            200: TakeSerializer(many=True),
            403: RecordingErrorSerializer,
            404: RecordingErrorSerializer,
        },
    )
    def get(self, request: Request, external_id: str) -> Response:
        item = item_for_actor(_user(request), external_id)
        takes = own_takes(_user(request), item).select_related("item")
        return Response(
            TakeSerializer(takes.prefetch_related("reviews"), many=True, context={"request": request}).data
        )

    @extend_schema(
        summary="Upload a take of an assigned script",
        description=(
            "The audio is checked (size, format, length, silence, clipping), converted to 16 kHz mono "
            "16-bit WAV and stored with its original under random keys; an analysis job then measures it "
            "and assigns three reviewers. A refused upload leaves nothing behind."
        ),
        request={"multipart/form-data": TakeUploadSerializer},
        responses={
            201: TakeSerializer,
            400: OpenApiResponse(
                RecordingErrorSerializer, description="The audio was refused; `detail` says why"
            ),
            403: RecordingErrorSerializer,
            404: OpenApiResponse(RecordingErrorSerializer, description="No such script assigned to you"),
            409: OpenApiResponse(RecordingErrorSerializer, description="The script takes no recording now"),
        },
    )
    def post(self, request: Request, external_id: str) -> Response:
        actor = _user(request)
        item = item_for_actor(actor, external_id)
        upload = request.FILES.get("audio")
        if upload is None:
            return _refused("Attach the recording as the multipart field “audio”.")
        try:
            refuse_oversized(upload.size or 0, upload_limits())
            take = record_take(item, actor, upload.read(), upload.name or "recording")
        except AudioRejected as refused:
            return _refused(refused.reason)
        except TakeNotAllowed as not_allowed:
            return _refused(not_allowed.reason, status.HTTP_409_CONFLICT)
        return Response(
            TakeSerializer(take, context={"request": request}).data, status=status.HTTP_201_CREATED
        )


class OpenReviewsView(APIView):
    """The reviewer's takes waiting for a verdict."""

    permission_classes = [HasRole]
    required_roles = (Role.REVIEWER,)

    @extend_schema(
        summary="List my reviews waiting for a verdict", responses={200: ReviewSerializer(many=True)}
    )
    def get(self, request: Request) -> Response:
        reviews = list(Review.objects.open_for(_user(request)).select_related("take__item"))
        # Handing out the audio is presenting the take: its playback cannot end sooner.
        present_reviews(reviews)
        histories = conversations_so_far(
            [review.take.item for review in reviews], _user(request), own_takes_only=False
        )
        context = {"request": request, "histories": histories}
        return Response(ReviewSerializer(reviews, many=True, context=context).data)


class PlayedView(APIView):
    """Report that a take under review played to the end (the playback gate of verdicts)."""

    permission_classes = [HasRole]
    required_roles = (Role.REVIEWER,)

    @extend_schema(
        summary="Report that I played a take to the end",
        request=None,
        responses={
            200: ReviewSerializer,
            404: RecordingErrorSerializer,
            409: OpenApiResponse(
                RecordingErrorSerializer,
                description=(
                    "Not played to the end: the take's whole audio (its `audio_url`, at once or by "
                    "ranges) has not been fetched by you, or too short a time ago; `detail` says which"
                ),
            ),
        },
    )
    def post(self, request: Request, review_id: uuid.UUID) -> Response:
        review = review_for_reviewer(_user(request), review_id)
        present_reviews([review])
        try:
            record_playback(review)
        except PlaybackRequired as refused:
            return _refused(str(refused), status.HTTP_409_CONFLICT)
        return Response(ReviewSerializer(review, context={"request": request}).data)


class VerdictView(APIView):
    """Accept or reject one take under review (after playing it to the end), or change my verdict
    while the take is not decided."""

    permission_classes = [HasRole]
    required_roles = (Role.REVIEWER,)
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(
        summary="Give my verdict on a take",
        request=VerdictSerializer,
        responses={
            200: ReviewSerializer,
            400: RecordingErrorSerializer,
            403: RecordingErrorSerializer,
            404: RecordingErrorSerializer,
            409: OpenApiResponse(
                RecordingErrorSerializer,
                description="The take is decided, or has not been played to the end (report it played first)",
            ),
        },
    )
    def post(self, request: Request, review_id: uuid.UUID) -> Response:
        reviewer = _user(request)
        review = review_for_reviewer(reviewer, review_id)
        given = VerdictSerializer(data=request.data)
        if not given.is_valid():
            return _refused(_first_error(given.errors))
        try:
            result = submit_verdict(
                review.pk,
                reviewer,
                given.validated_data["verdict"],
                given.validated_data["reasons"],
                given.validated_data["comment"],
            )
        except ReviewNotFound:
            return _refused("No such review.", status.HTTP_404_NOT_FOUND)
        except (ReviewClosed, PlaybackRequired) as closed:
            return _refused(str(closed), status.HTTP_409_CONFLICT)
        except ReviewProblem as problem:
            return _refused(str(problem))
        fresh = review_for_reviewer(reviewer, result.review.public_id)
        return Response(ReviewSerializer(fresh, context={"request": request}).data)


# --- Items and assignments (admins) -------------------------------------------------------------


def _choice_filter(request: Request, name: str, choices: list[str]) -> str:
    value = request.query_params.get(name, "")
    if value and value not in choices:
        raise ValidationError({name: f"“{value}” is not one of {', '.join(choices)}."})
    return value


def _flag(request: Request, name: str) -> bool:
    """Return a yes/no option given in the query string or (multipart) form fields."""
    form = request.data if not isinstance(request.data, (list, RawFile)) else {}
    value = request.query_params.get(name) or form.get(name) or ""
    return str(value).lower() in ("1", "true", "on", "yes")


def _upload_of(request: Request) -> tuple[bytes, str]:
    """Return (bytes, file name) of an item upload: a multipart file, a raw CSV/JSONL body, or JSON rows."""
    # Checked before the body is read: the page's limit holds for every way of sending a file.
    if int(request.META.get("CONTENT_LENGTH") or 0) > MAX_IMPORT_BYTES + 64 * 1024:
        raise ValidationError(f"The upload is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB; split it.")
    if isinstance(request.data, RawFile):
        return request.data.data, request.data.name
    if isinstance(request.data, list):
        if not all(isinstance(row, dict) for row in request.data):
            raise ValidationError("Send a JSON array of item objects.")
        return "\n".join(json.dumps(row) for row in request.data).encode(), "items.jsonl"
    upload = request.FILES.get("file")
    if upload is None:
        raise ValidationError("Send a JSON array of items, a CSV or JSONL body, or a multipart field “file”.")
    if (upload.size or 0) > MAX_IMPORT_BYTES:
        raise ValidationError(f"The file is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB; split it.")
    return upload.read(), upload.name or "upload"


def _item_documents(view: ListCreateAPIView[Item]) -> Response:
    """A page of the view's items as ItemSerializer's documents, written from plain rows
    (webapp.api.rows): no model instances, no per-cell serializer work (issue 27)."""
    shape = row_shape(ItemSerializer)
    page = view.paginate_queryset(shape.values(view.get_queryset()))
    return view.get_paginated_response(shape.documents(page or []))


class ItemListView(ListCreateAPIView[Item]):
    """Every item (script), filterable; and bulk create or update from JSON, CSV or JSONL."""

    permission_classes = [HasRole]
    required_roles = RECORDING_ADMINS
    serializer_class = ItemSerializer
    parser_classes = [JSONParser, MultiPartParser, CsvParser, JsonLinesParser]

    def get_queryset(self) -> QuerySet[Item]:
        items = Item.objects.all()
        for name, choices in (
            ("state", Item.State.values),
            ("scenario", Scenario.values),
            ("split", Split.values),
        ):
            if value := _choice_filter(self.request, name, choices):
                items = items.filter(**{name: value})
        return items

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return _item_documents(self)

    @extend_schema(
        summary="List items",
        parameters=[
            OpenApiParameter("state", enum=Item.State.values),
            OpenApiParameter("scenario", enum=Scenario.values),
            OpenApiParameter("split", enum=Split.values),
        ],
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Create or update items in bulk",
        description=(
            "The page's import, all-or-nothing: every row is checked first and, unless "
            "`import_valid_rows` is set, one bad row means nothing is written and every problem is "
            "listed (`problems`: row, field, message). Send a JSON array of item objects, a CSV "
            "(`text/csv`) or JSONL (`application/x-ndjson`) body, or a multipart `file`."
        ),
        request={
            "application/json": {"type": "array", "items": {"type": "object"}},
            "multipart/form-data": ItemImportSerializer,
            "text/csv": {"type": "string"},
            "application/x-ndjson": {"type": "string"},
        },
        responses={201: ItemImportReportSerializer, 200: ItemImportReportSerializer, 400: ProblemSerializer},
        examples=[
            OpenApiExample(
                "Two items",
                request_only=True,
                media_type="application/json",
                value=[
                    {
                        "external_id": "EE-0001",
                        "text": "I got the job!",
                        "scenario": "implicit",
                        "target_emotion": "happy",
                        "split": "test",
                    },
                    {
                        "external_id": "EE-0002",
                        "text": "Fine. Whatever.",
                        "scenario": "modality-conflict",
                        "target_emotion": "angry",
                        "split": "train",
                    },
                ],
            )
        ],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data, name = _upload_of(request)
        report = import_items(data, name, import_valid_rows=_flag(request, "import_valid_rows"))
        problems = [{"row": e.row, "field": e.field, "message": str(e)} for e in report.errors]
        body = {
            "format": report.format,
            "rows_read": report.rows_read,
            "created": report.created,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "imported": report.imported,
            "problems": problems,
        }
        if not report.imported:
            detail = f"Nothing was imported: {report.invalid_rows or len(report.errors)} problem(s)."
            return problem(detail if report.errors else "The file holds no items.", problems=problems)
        code = status.HTTP_201_CREATED if report.created else status.HTTP_200_OK
        return Response(body, status=code)


class AssignmentView(ListCreateAPIView[Item]):
    """Which actor holds which script; and assigning scripts to actors in balanced shares."""

    permission_classes = [HasRole]
    required_roles = RECORDING_ADMINS
    serializer_class = ItemSerializer
    parser_classes = [JSONParser]

    def get_queryset(self) -> QuerySet[Item]:
        items = Item.objects.filter(actor__isnull=False)
        if actor := self.request.query_params.get("actor"):
            items = items.filter(actor__username=actor)
        return items

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return _item_documents(self)

    @extend_schema(summary="List assigned items", parameters=[OpenApiParameter("actor", str)])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Assign items to voice actors",
        request=AssignSerializer,
        responses={200: AssignmentReportSerializer, 400: ProblemSerializer},
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        given = AssignSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        names = given.validated_data["actors"]
        actors = list(User.objects.filter(username__in=names, is_active=True))
        unknown = sorted(set(names) - {actor.username for actor in actors})
        if unknown:
            raise ValidationError({"actors": f"no such users: {', '.join(unknown)}"})
        chosen = Q(external_id__in=given.validated_data.get("items", []))
        chosen |= Q(dialogue__external_id__in=given.validated_data.get("dialogues", []))
        ids = list(Item.objects.filter(chosen).values_list("pk", flat=True))
        try:
            report = assign_items(ids, actors)
        except ValueError as exc:
            raise ValidationError({"actors": str(exc)}) from exc
        return Response({"assigned": dict(report.assigned), "skipped": report.skipped})
