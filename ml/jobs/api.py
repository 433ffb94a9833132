"""The EchoChat jobs API (admins): start inference, training or reward scoring with the start pages'
forms and `start_ml_job`, follow a job, cancel it, and find the checkpoint it produced."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListCreateAPIView
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ml.jobs.access import ML_ROLES, ml_job_or_404
from ml.jobs.launch import ML_JOB_KINDS, LaunchRefused, start_ml_job
from ml.jobs.models import Checkpoint
from ml.jobs.views import START_FORMS
from webapp.api.errors import Conflict, ProblemSerializer, form_problems, problem
from webapp.api.pagination import NewestFirstPagination
from webapp.api.serializers import JobSerializer, cancel_or_conflict
from webapp.models import Job, User
from webapp.roles import HasRole


class CheckpointSerializer(serializers.ModelSerializer[Checkpoint]):
    class Meta:
        model = Checkpoint
        fields = ["id", "name", "kind", "uri", "arch", "base_model", "metadata"]
        read_only_fields = fields


class MlJobSerializer(JobSerializer):
    checkpoint = serializers.SerializerMethodField()

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "checkpoint"]
        read_only_fields = fields

    def get_checkpoint(self, job: Job) -> dict[str, Any] | None:
        """The checkpoint the job produced (training jobs, once it succeeded), else null."""
        # `checkpoints` is prefetched on lists; a training job produces at most one.
        checkpoint = next(iter(job.checkpoints.all()), None)
        return CheckpointSerializer(checkpoint).data if checkpoint is not None else None


class StartJobSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=sorted(START_FORMS), help_text="Which job to start")
    parameters = serializers.DictField(
        required=False,
        default=dict,
        help_text="The start page's form fields for this kind (its defaults otherwise)",
    )


class JobListView(ListCreateAPIView[Job]):
    permission_classes = [HasRole]
    required_roles = ML_ROLES
    serializer_class = MlJobSerializer
    pagination_class = NewestFirstPagination
    parser_classes = [JSONParser]

    def get_queryset(self) -> QuerySet[Job]:
        return Job.objects.filter(kind__in=ML_JOB_KINDS).prefetch_related("checkpoints")

    @extend_schema(summary="List EchoChat jobs, newest first")
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Start an EchoChat job",
        description="Validated by the start page's form of that kind; 409 when the launch is refused.",
        request=StartJobSerializer,
        responses={201: MlJobSerializer, 400: ProblemSerializer, 409: ProblemSerializer},
        examples=[
            OpenApiExample(
                "Inference on the test split",
                request_only=True,
                value={"kind": "echochat_inference", "parameters": {"system_name": "echochat-4000"}},
            )
        ],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        given = StartJobSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        kind = given.validated_data["kind"]
        form_class = START_FORMS[kind]
        blank = form_class()
        initial = {name: blank.get_initial_for_field(field, name) for name, field in blank.fields.items()}
        form = form_class(
            {**{k: v for k, v in initial.items() if v is not None}, **given.validated_data["parameters"]}
        )
        if not form.is_valid():
            return problem("The job cannot start.", problems=form_problems(form.errors))
        user = request.user
        try:
            job = start_ml_job(
                kind,
                started_by=user if isinstance(user, User) else None,
                parameters=form.job_parameters(),
                splits=form.chosen_splits(),
            )
        except LaunchRefused as exc:
            raise Conflict(str(exc)) from exc
        return Response(MlJobSerializer(job).data, status=status.HTTP_201_CREATED)


class JobDetailView(APIView):
    permission_classes = [HasRole]
    required_roles = ML_ROLES

    @extend_schema(
        summary="A job's status, progress and checkpoint",
        responses={200: MlJobSerializer, 404: ProblemSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(MlJobSerializer(ml_job_or_404(pk)).data)


class JobCancelView(APIView):
    permission_classes = [HasRole]
    required_roles = ML_ROLES

    @extend_schema(
        summary="Cancel a job",
        request=None,
        responses={200: MlJobSerializer, 404: ProblemSerializer, 409: ProblemSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        cancel_or_conflict(ml_job_or_404(pk), request.user)
        return Response(MlJobSerializer(ml_job_or_404(pk)).data)
