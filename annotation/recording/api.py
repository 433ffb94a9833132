"""The recording API: actors upload takes, reviewers fetch their blind reviews and send verdicts."""

from __future__ import annotations

import uuid
from typing import cast

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audio.upload import AudioRejected, refuse_oversized
from annotation.recording.access import item_for_actor, own_takes, review_for_reviewer
from annotation.recording.models import Review
from annotation.recording.reviews import (
    ReviewClosed,
    ReviewNotFound,
    ReviewProblem,
    submit_verdict,
)
from annotation.recording.serializers import (
    RecordingErrorSerializer,
    ReviewSerializer,
    TakeSerializer,
    TakeUploadSerializer,
    VerdictSerializer,
)
from annotation.recording.takes import TakeNotAllowed, record_take, upload_limits
from webapp.models import User
from webapp.roles import HasRole, Role


def _user(request: Request) -> User:
    # HasRole has admitted only authenticated users with the right role.
    return cast(User, request.user)


def _refused(reason: str, code: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"detail": reason}, status=code)


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
        reviews = Review.objects.open_for(_user(request)).select_related("take__item")
        return Response(ReviewSerializer(reviews, many=True, context={"request": request}).data)


class VerdictView(APIView):
    """Accept or reject one take under review."""

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
                RecordingErrorSerializer, description="Already decided, or the take left review"
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
        except ReviewClosed as closed:
            return _refused(str(closed), status.HTTP_409_CONFLICT)
        except ReviewProblem as problem:
            return _refused(str(problem))
        fresh = review_for_reviewer(reviewer, result.review.public_id)
        return Response(ReviewSerializer(fresh, context={"request": request}).data)
