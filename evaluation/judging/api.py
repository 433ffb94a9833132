"""The judging API (admins): judges, judge runs (start, status with progress, cancel) and each run's
judgements per output and stage. Runs start through `start_judge_run`, validated by the page's form."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView, ListCreateAPIView
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.gold.access import gold_withheld_items
from evaluation.judging.access import judge_run_for_admin, readable_judgement
from evaluation.judging.forms import JudgeRunForm
from evaluation.judging.models import JudgeConfig, Judgement, JudgeRun
from evaluation.judging.runs import JudgeRunRefused, start_judge_run
from evaluation.outputs.access import SYSTEM_ADMINS
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION
from webapp.api.errors import Conflict, ProblemSerializer, form_problems, problem
from webapp.api.pagination import NewestFirstPagination
from webapp.api.serializers import JobSerializer, cancel_or_conflict
from webapp.models import User
from webapp.roles import HasRole


class JudgeSerializer(serializers.ModelSerializer[JudgeConfig]):
    class Meta:
        model = JudgeConfig
        fields = ["id", "name", "model", "base_url", "attach_audio", "created_at"]
        read_only_fields = fields


class JudgeRunSerializer(serializers.ModelSerializer[JudgeRun]):
    system = serializers.CharField(source="system.name", read_only=True)
    judge = serializers.CharField(source="judge_config.name", read_only=True)
    job = JobSerializer(read_only=True, allow_null=True)
    status = serializers.SerializerMethodField()
    summary = serializers.SerializerMethodField()

    class Meta:
        model = JudgeRun
        fields = [
            "id",
            "system",
            "judge",
            "benchmark_version",
            "retry_errors",
            "job",
            "status",
            "summary",
            "created_at",
        ]
        read_only_fields = fields

    def get_status(self, run: JudgeRun) -> str:
        """What happened: the job's status; a finished run's is its tally's (succeeded,
        finished_with_errors, failed: ``webapp.lib.row_outcome``)."""
        return run.status()

    def get_summary(self, run: JudgeRun) -> str:
        """The status in words with its figures, e.g. "Finished with errors: 15 of 36 stages failed (42%)"."""
        return run.sentence()


class JudgeRunDetailSerializer(JudgeRunSerializer):
    counts = serializers.SerializerMethodField()

    rerun = serializers.SerializerMethodField()

    class Meta(JudgeRunSerializer.Meta):
        fields = [*JudgeRunSerializer.Meta.fields, "counts", "rerun"]
        read_only_fields = fields

    def get_counts(self, run: JudgeRun) -> dict[str, int]:
        """Judgements the run stands for so far (earlier runs' of its outputs included): valid, and
        each kind of judge error."""
        return run.counts()

    def get_rerun(self, run: JudgeRun) -> str:
        """What this run judged afresh and what it left from earlier runs ("" until it has ended)."""
        return run.rerun_report()


class StartRunSerializer(serializers.Serializer[Any]):
    system = serializers.IntegerField(help_text="The system's id")
    judge = serializers.IntegerField(help_text="The judge configuration's id")
    benchmark_version = serializers.CharField(required=False, default=DEFAULT_BENCHMARK_VERSION)
    retry_errors = serializers.BooleanField(required=False, default=False)


class JudgementSerializer(serializers.ModelSerializer[Judgement]):
    """One judgement; on an item the reader is still labelling, everything written or scored against
    its gold is blank and `withheld` says why (`evaluation.judging.access.readable_judgement`).
    Needs the reader's `withheld_items` in its context."""

    item = serializers.CharField(source="output.item.external_id", read_only=True)
    output = serializers.UUIDField(source="output.public_id", read_only=True)
    withheld = serializers.CharField(
        read_only=True,
        help_text='"withheld while you label this item" when the rationale, error and scores are '
        'withheld from you (you are still labelling the item, and the judge was shown its gold); else ""',
    )

    class Meta:
        model = Judgement
        fields = [
            "id",
            "output",
            "item",
            "stage",
            "score",
            "raw_sum",
            "cap",
            "cap_reasons",
            "subscores",
            "judge_flags",
            "auto_flags",
            "rationale",
            "error_kind",
            "error",
            "cached",
            "withheld",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Judgement) -> dict[str, Any]:
        return super().to_representation(readable_judgement(instance, self.context["withheld_items"]))


class JudgeListView(ListAPIView[JudgeConfig]):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    serializer_class = JudgeSerializer

    def get_queryset(self) -> QuerySet[JudgeConfig]:
        judges = JudgeConfig.objects.all()
        if name := self.request.query_params.get("name"):
            judges = judges.filter(name=name)
        return judges

    @extend_schema(summary="List judge configurations", parameters=[OpenApiParameter("name", str)])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class JudgeRunListView(ListCreateAPIView[JudgeRun]):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    serializer_class = JudgeRunSerializer
    pagination_class = NewestFirstPagination
    parser_classes = [JSONParser]
    queryset = JudgeRun.objects.select_related("system", "judge_config", "job")

    @extend_schema(summary="List judge runs, newest first")
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Start a judge run",
        description="409 while a run of the same judge on the same outputs is queued or running.",
        request=StartRunSerializer,
        responses={201: JudgeRunDetailSerializer, 400: ProblemSerializer, 409: ProblemSerializer},
        examples=[OpenApiExample("Judge a system", request_only=True, value={"system": 3, "judge": 1})],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        given = StartRunSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        form = JudgeRunForm(
            {
                "system": given.validated_data["system"],
                "judge_config": given.validated_data["judge"],
                "benchmark_version": given.validated_data["benchmark_version"],
                "retry_errors": given.validated_data["retry_errors"],
            }
        )
        if not form.is_valid():
            return problem("The run cannot start.", problems=form_problems(form.errors))
        user = request.user
        try:
            run = start_judge_run(
                form.cleaned_data["system"],
                form.cleaned_data["benchmark_version"],
                form.cleaned_data["judge_config"],
                started_by=user if isinstance(user, User) else None,
                retry_errors=form.cleaned_data["retry_errors"],
            )
        except JudgeRunRefused as exc:
            raise Conflict(str(exc)) from exc
        return Response(JudgeRunDetailSerializer(run).data, status=status.HTTP_201_CREATED)


class JudgeRunDetailView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS

    @extend_schema(
        summary="A judge run's status, progress and counts",
        responses={200: JudgeRunDetailSerializer, 404: ProblemSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(JudgeRunDetailSerializer(judge_run_for_admin(pk)).data)


class JudgeRunCancelView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS

    @extend_schema(
        summary="Cancel a judge run",
        request=None,
        responses={200: JudgeRunDetailSerializer, 404: ProblemSerializer, 409: ProblemSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        run = judge_run_for_admin(pk)
        cancel_or_conflict(run.job, request.user)
        return Response(JudgeRunDetailSerializer(judge_run_for_admin(pk)).data)


class JudgeRunResultsView(ListAPIView[Judgement]):
    """The run's judgements, one per output and stage (errors included, with their kind)."""

    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    serializer_class = JudgementSerializer

    def get_queryset(self) -> QuerySet[Judgement]:
        run = judge_run_for_admin(self.kwargs["pk"])
        return Judgement.objects.filter(run=run).select_related("output__item")

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "withheld_items": gold_withheld_items(self.request.user)}
