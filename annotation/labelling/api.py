"""The labelling API: an annotator's own annotations, autosave with a version check, and submit.

Every query goes through `annotation.labelling.access` and is filtered by the requesting
annotator, so no response ever carries another annotator's labels; an annotation that is not
yours answers 404, as if it did not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.labelling import workflows
from annotation.labelling.access import own_annotations
from annotation.labelling.models import Annotation
from webapp.api.pagination import NewestFirstPagination
from webapp.api.rows import row_shape
from webapp.fixed_reads import INTEGER, FixedRead
from webapp.models import User
from webapp.roles import HasRole, Role


class AnnotationSerializer(serializers.ModelSerializer[Annotation]):
    item = serializers.CharField(source="item.external_id", read_only=True)
    text = serializers.CharField(source="item.text", read_only=True)
    scenario = serializers.CharField(source="item.scenario", read_only=True)
    dialogue = serializers.CharField(source="item.dialogue.external_id", read_only=True, default=None)
    turn = serializers.IntegerField(source="item.turn", read_only=True, default=None)

    class Meta:
        model = Annotation
        fields = [
            "id",
            "item",
            "text",
            "scenario",
            "dialogue",
            "turn",
            "status",
            "version",
            "perception",
            "tom",
            "cross_turn",
            "changed_from_draft",
            "updated_at",
            "submitted_at",
        ]
        read_only_fields = fields


# AnnotationSerializer's documents written from `.values()` rows (webapp.api.rows): what the API
# answers; the serializer stays the shape, and the schema, they follow.
ANNOTATION_ROWS = row_shape(AnnotationSerializer)


def _own_document_rows(user_id: int, annotation_id: int) -> QuerySet[Any]:
    """The row of one of the user's own annotations that its document is written from."""
    return ANNOTATION_ROWS.values(own_annotations(user_id).filter(pk=annotation_id))


# The one-annotation read, the same SQL on every request but for the two ids: compiled once
# (`webapp.fixed_reads`, issue 46), as the workbench's read of the same annotation is.
_OWN_DOCUMENT_READ = FixedRead(_own_document_rows, user_id=INTEGER, annotation_id=INTEGER)


def own_document(user: User, annotation_id: int) -> dict[str, Any]:
    """Return the API's document of one of the user's own annotations; else raise Http404."""
    rows = _OWN_DOCUMENT_READ.read(user_id=user.pk, annotation_id=annotation_id)
    if not rows:
        raise Http404("No such annotation of yours.")
    return ANNOTATION_ROWS.documents(rows)[0]


class LabelsSerializer(serializers.Serializer[Any]):
    version = serializers.IntegerField(min_value=0, help_text="The version these labels were edited from")
    perception = serializers.DictField(help_text="A perception document (annotation.labelling.schema)")
    tom = serializers.DictField(help_text="A Theory-of-Mind document (annotation.labelling.schema)")
    cross_turn = serializers.DictField(
        required=False,
        default=dict,
        help_text="Cross-turn labels, required on a dialogue's later turns only "
        "(annotation.labelling.dialogue.cross_turn)",
    )


class LabelErrorSerializer(serializers.Serializer[Any]):
    detail = serializers.CharField()
    current_version = serializers.IntegerField(required=False)
    problems = serializers.ListField(child=serializers.DictField(), required=False)


def _user(request: Request) -> User:
    # HasRole has admitted only authenticated users with the annotator role.
    return cast(User, request.user)


def _refusal(error: workflows.LabellingError) -> Response:
    if isinstance(error, workflows.StaleAnnotation):
        body: dict[str, Any] = {
            "detail": str(error),
            "problems": [],
            "current_version": error.current_version,
        }
        return Response(body, status=status.HTTP_409_CONFLICT)
    if isinstance(error, workflows.InvalidLabels):
        problems = [
            {"field": problem.field, "label": problem.label, "message": problem.message}
            for problem in error.problems
        ]
        return Response({"detail": str(error), "problems": problems}, status=status.HTTP_400_BAD_REQUEST)
    return Response({"detail": str(error), "problems": []}, status=status.HTTP_409_CONFLICT)


def _labels_responses(*, refused_as_invalid: str) -> dict[int, Any]:
    """Return the documented answers of a labels save, as `_apply` and `_refusal` give them."""
    return {
        200: AnnotationSerializer,
        400: OpenApiResponse(LabelErrorSerializer, description=refused_as_invalid),
        409: OpenApiResponse(LabelErrorSerializer, description="Stale version, or already submitted"),
    }


def _apply(request: Request, pk: int, action: Callable[..., Annotation]) -> Response:
    """Run save_draft or submit_annotation on one of my annotations with the posted labels.

    The action's locking read is the ownership check: someone else's annotation answers 404.
    """
    labels = LabelsSerializer(data=request.data)
    labels.is_valid(raise_exception=True)
    try:
        changed = action(
            pk,
            user=_user(request),
            perception=labels.validated_data["perception"],
            tom=labels.validated_data["tom"],
            expected_version=labels.validated_data["version"],
            cross_turn=labels.validated_data["cross_turn"],
        )
    except workflows.LabellingError as error:
        return _refusal(error)
    return Response(ANNOTATION_ROWS.document_of(changed))


class AnnotationList(ListAPIView[Annotation]):
    """My annotations (never anyone else's), newest assignment first, in cursor pages."""

    permission_classes = [HasRole]
    required_roles = (Role.ANNOTATOR,)
    serializer_class = AnnotationSerializer
    pagination_class = NewestFirstPagination

    def get_queryset(self) -> Any:
        # Only the columns the documents show: never the item's instructions and so on.
        return ANNOTATION_ROWS.values(own_annotations(_user(self.request)))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(ANNOTATION_ROWS.documents(page or []))


class AnnotationDetail(APIView):
    """One of my annotations: read it, or autosave new labels over the version I edited."""

    permission_classes = [HasRole]
    required_roles = (Role.ANNOTATOR,)

    @extend_schema(summary="Read one of my annotations", responses={200: AnnotationSerializer})
    def get(self, request: Request, pk: int) -> Response:
        return Response(own_document(_user(request), pk))

    @extend_schema(
        summary="Autosave my labels",
        description="Refused with 409 when the annotation was saved from elsewhere since `version`.",
        request=LabelsSerializer,
        responses=_labels_responses(refused_as_invalid="A value outside the label vocabularies"),
    )
    def put(self, request: Request, pk: int) -> Response:
        return _apply(request, pk, workflows.save_draft)


class AnnotationSubmit(APIView):
    """Submit my complete labels (a revision is kept)."""

    permission_classes = [HasRole]
    required_roles = (Role.ANNOTATOR,)

    @extend_schema(
        summary="Submit my labels",
        request=LabelsSerializer,
        responses=_labels_responses(refused_as_invalid="Incomplete or invalid labels"),
    )
    def post(self, request: Request, pk: int) -> Response:
        return _apply(request, pk, workflows.submit_annotation)
