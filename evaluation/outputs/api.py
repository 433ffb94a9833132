"""The systems API (admins: it names systems): register a system, upload its outputs (JSONL with a zip
of audio, an S3 prefix, or audio URLs in the rows, through the import page's form and
`import_outputs`), and each output's status."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView, ListCreateAPIView, RetrieveAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.recording.models import Dialogue
from evaluation.outputs.access import SYSTEM_ADMINS, system_for_admin
from evaluation.outputs.audio_sources import AudioSource, S3AudioSource, ZipAudioSource
from evaluation.outputs.forms import OutputImportForm
from evaluation.outputs.harnesses import ECHOSTUDIO, FORMAT_CHOICES
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, ModelOutput, System
from evaluation.outputs.reports import (
    dialogue_outputs,
    dialogues_answered_by,
)
from evaluation.outputs.url_audio import UrlAudioSource, audio_urls
from webapp.api.errors import ProblemSerializer, form_problems, problem
from webapp.roles import HasRole


class SystemSerializer(serializers.ModelSerializer[System]):
    class Meta:
        model = System
        fields = ["id", "name", "category", "version", "text_only", "anonymous_code", "created_at"]
        read_only_fields = ["id", "anonymous_code", "created_at"]


class OutputStatusSerializer(serializers.ModelSerializer[ModelOutput]):
    """Where one output stands: parsed or not (and why), audio present, stages judged so far."""

    item = serializers.CharField(source="item.external_id", read_only=True)
    dialogue = serializers.SerializerMethodField()
    turn = serializers.IntegerField(source="item.turn", read_only=True, allow_null=True)
    has_audio = serializers.SerializerMethodField()
    judgements = serializers.IntegerField(source="n_judgements", read_only=True)

    class Meta:
        model = ModelOutput
        fields = [
            "id",
            "public_id",
            "item",
            "dialogue",
            "turn",
            "benchmark_version",
            "structured",
            "parse_problems",
            "has_audio",
            "judgements",
            "harness_metrics",
            "imported_at",
        ]
        read_only_fields = fields

    def get_has_audio(self, output: ModelOutput) -> bool:
        return bool(output.response_audio_key)

    def get_dialogue(self, output: ModelOutput) -> str | None:
        """Return the dialogue's id when the output answers a dialogue turn (null for a single item)."""
        dialogue = output.item.dialogue
        return dialogue.external_id if dialogue is not None else None


class DialogueTurnSerializer(serializers.Serializer[Any]):
    turn = serializers.IntegerField(source="item.turn")
    item = serializers.CharField(source="item.external_id")
    output = OutputStatusSerializer(allow_null=True)


class DialogueOutputsSerializer(serializers.Serializer[Any]):
    """A dialogue with the system's output to each of its turns, in turn order (null: not answered)."""

    dialogue = serializers.CharField(source="dialogue.external_id")
    topic = serializers.CharField(source="dialogue.topic")
    turns = DialogueTurnSerializer(many=True)


class OutputUploadSerializer(serializers.Serializer[Any]):
    rows = serializers.FileField(help_text="The outputs as JSONL, one object per item")
    audio_zip = serializers.FileField(required=False, help_text="Response audio as a zip")
    s3_prefix = serializers.CharField(required=False, help_text="…or an S3 prefix, s3://bucket/run/")
    benchmark_version = serializers.CharField(required=False, default=DEFAULT_BENCHMARK_VERSION)
    skip_invalid_rows = serializers.BooleanField(required=False, default=False)
    format_name = serializers.ChoiceField(
        choices=[name for name, _ in FORMAT_CHOICES], required=False, default=ECHOSTUDIO
    )


class ImportReportSerializer(serializers.Serializer[Any]):
    rows = serializers.IntegerField()
    imported = serializers.BooleanField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    removed = serializers.IntegerField()
    skipped = serializers.IntegerField()
    warnings = serializers.ListField(child=serializers.CharField())


class SystemListView(ListCreateAPIView[System]):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    serializer_class = SystemSerializer

    def get_queryset(self) -> QuerySet[System]:
        systems = System.objects.all()
        if name := self.request.query_params.get("name"):
            systems = systems.filter(name=name)
        return systems

    @extend_schema(summary="List systems", parameters=[OpenApiParameter("name", str)])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Register a system",
        responses={201: SystemSerializer, 400: ProblemSerializer},
        examples=[
            OpenApiExample(
                "A checkpoint",
                request_only=True,
                value={"name": "echochat-step-4000", "category": "ours", "version": "s3://ckpt/4000"},
            )
        ],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().post(request, *args, **kwargs)


class SystemDetailView(RetrieveAPIView[System]):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    serializer_class = SystemSerializer
    queryset = System.objects.all()

    @extend_schema(summary="One system", responses={200: SystemSerializer, 404: ProblemSerializer})
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class SystemOutputsView(ListAPIView[ModelOutput]):
    """A system's outputs with their status; POST uploads (and replaces) them for a benchmark version."""

    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    serializer_class = OutputStatusSerializer
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self) -> QuerySet[ModelOutput]:
        system = system_for_admin(self.kwargs["pk"])
        outputs = ModelOutput.objects.filter(system=system).select_related("item__dialogue")
        if version := self.request.query_params.get("benchmark_version"):
            outputs = outputs.filter(benchmark_version=version)
        # "judgements" is judging's reverse relation; naming it needs no import from the layer above.
        return outputs.annotate(n_judgements=Count("judgements"))

    @extend_schema(summary="List a system's outputs", parameters=[OpenApiParameter("benchmark_version", str)])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Upload a system's outputs",
        description=(
            "Audio comes as a zip, an S3 prefix, or as http(s) URLs in the rows' `audio` field. "
            "The import page's validation, all-or-nothing unless `skip_invalid_rows`: every problem "
            "(unknown item, duplicate, missing or unreadable audio) comes back in `problems` with its "
            "line and nothing is imported. Importing again replaces the outputs of that version."
        ),
        request={"multipart/form-data": OutputUploadSerializer},
        responses={201: ImportReportSerializer, 400: ProblemSerializer, 404: ProblemSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        system = system_for_admin(pk)
        data = request.data.copy()
        data.setdefault("benchmark_version", DEFAULT_BENCHMARK_VERSION)
        form = OutputImportForm(data, request.FILES)
        if not form.is_valid():
            return problem("The upload has problems.", problems=form_problems(form.errors))
        audio: AudioSource | None = None
        rows = form.cleaned_data["rows"].read()
        try:
            if wanted := audio_urls(rows):
                if form.cleaned_data["audio_zip"] or form.cleaned_data["s3_prefix"]:
                    return problem("The rows name their audio by URL: send no zip or S3 prefix with them.")
                fetched = UrlAudioSource(wanted)
                if fetched.problems:
                    return problem(
                        f"Nothing was imported: {len(fetched.problems)} audio file(s) could not be fetched.",
                        problems=[str(error) for error in fetched.problems],
                    )
                audio = fetched
            elif form.cleaned_data["audio_zip"]:
                audio = ZipAudioSource(form.cleaned_data["audio_zip"])
            elif form.cleaned_data["s3_prefix"]:
                audio = S3AudioSource(form.cleaned_data["s3_prefix"])
        except Exception as exc:  # a bad zip or an unreachable bucket: say which, as the page does
            return problem(f"The audio could not be opened: {type(exc).__name__}: {exc}")
        report = import_outputs(
            system,
            form.cleaned_data["benchmark_version"],
            rows,
            audio,
            skip_invalid_rows=form.cleaned_data["skip_invalid_rows"],
            format_name=form.cleaned_data["format_name"],
        )
        if not report.imported:
            return problem(
                f"Nothing was imported: {len(report.errors)} problem(s).",
                problems=[str(error) for error in report.errors],
            )
        body = {
            "rows": report.rows,
            "imported": True,
            "created": report.created,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "removed": report.removed,
            "skipped": report.skipped,
            "warnings": [str(warning) for warning in report.warnings],
        }
        return Response(body, status=status.HTTP_201_CREATED)


class SystemDialogueOutputsView(ListAPIView[Dialogue]):
    """A system's outputs to dialogue turns, grouped by dialogue in turn order."""

    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    serializer_class = DialogueOutputsSerializer

    def get_queryset(self) -> QuerySet[Dialogue]:
        return dialogues_answered_by(system_for_admin(self.kwargs["pk"]), self._version())

    def _version(self) -> str:
        return self.request.query_params.get("benchmark_version") or DEFAULT_BENCHMARK_VERSION

    @extend_schema(
        summary="A system's dialogue outputs, by dialogue",
        parameters=[OpenApiParameter("benchmark_version", str)],
        responses={200: DialogueOutputsSerializer(many=True), 404: ProblemSerializer},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        system = system_for_admin(self.kwargs["pk"])
        page = self.paginate_queryset(self.get_queryset())
        groups = dialogue_outputs(system, self._version(), page or [])
        return self.get_paginated_response(DialogueOutputsSerializer(groups, many=True).data)
