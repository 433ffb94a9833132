"""The EchoMind leaderboard API (admins: it names systems), the same numbers as the page."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, cast

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.echomind import reports
from evaluation.echomind import scoring as board
from evaluation.echomind.deliveries import DeliveryProblem
from evaluation.echomind.models import DeliveryImport
from evaluation.echomind.scoring import Accuracy
from evaluation.echomind.scoring import to_csv as board_csv
from evaluation.echomind.transfer import (
    IMPORTED,
    REFUSED,
    UNCHANGED,
    import_layout,
    report_of,
    upload_name,
    uploaded_files,
)
from evaluation.outputs.access import SYSTEM_ADMINS
from webapp.api.errors import ProblemSerializer, problem
from webapp.models import User
from webapp.roles import HasRole


class AccuracySerializer(serializers.Serializer[Any]):
    correct = serializers.IntegerField()
    asked = serializers.IntegerField()
    unparsed = serializers.IntegerField(help_text="Answers no documented pattern could read (asked, wrong)")
    rate = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="Wilson 95% interval")
    high = serializers.FloatField(allow_null=True)
    expected = serializers.IntegerField(help_text="N: the questions of this level (asked of expected)")


class EchoMindRowSerializer(serializers.Serializer[Any]):
    system = serializers.CharField()
    understanding = AccuracySerializer()
    reasoning = AccuracySerializer()
    wer = serializers.FloatField(allow_null=True, help_text="Transcription WER; null: not computed")
    replies = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text="Mean per metric; null: not computed"
    )
    wer_coverage = serializers.DictField(
        child=serializers.IntegerField(), help_text="{n, expected}: deliveries transcribed of those expected"
    )
    reply_coverage = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="Per metric {n, expected}: replies scored of the replies expected",
    )


class EchoMindBoardSerializer(serializers.Serializer[Any]):
    rows = EchoMindRowSerializer(many=True)
    breakdowns = serializers.DictField(child=serializers.ListField(child=serializers.DictField()))
    delivery_effects = serializers.ListField(child=serializers.DictField())


def _accuracy(acc: Accuracy) -> dict[str, Any]:
    return {**asdict(acc), "rate": acc.rate}


class EchoMindLeaderboardView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS

    @extend_schema(
        summary="The EchoMind leaderboard, accuracy breakdowns and the delivery effect",
        responses={200: EchoMindBoardSerializer},
    )
    def get(self, request: Request) -> Response:
        results = reports.results()
        rows = [
            {
                "system": row.system,
                "understanding": _accuracy(row.understanding),
                "reasoning": _accuracy(row.reasoning),
                "wer": row.wer,
                "replies": row.replies,
                "wer_coverage": asdict(row.wer_coverage),
                "reply_coverage": {key: asdict(found) for key, found in row.reply_coverage.items()},
            }
            for row in results.rows
        ]
        breakdowns = {
            grouping: [
                {"system": system, "group": group, **_accuracy(acc)} for (system, group), acc in found.items()
            ]
            for grouping, found in results.breakdowns.items()
        }
        effects = [asdict(effect) for effect in results.effects]
        return Response({"rows": rows, "breakdowns": breakdowns, "delivery_effects": effects})


class FileOutcomeSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=[IMPORTED, UNCHANGED, REFUSED])
    detail = serializers.CharField(help_text="What of it was imported, or why it was refused")


class EchoMindImportReportSerializer(serializers.Serializer[Any]):
    import_ = serializers.IntegerField(help_text="The import's number (its questions' scope)")
    cases = serializers.IntegerField(help_text="New cases")
    questions = serializers.IntegerField(help_text="New questions")
    audio = serializers.IntegerField(help_text="Recordings stored as accepted takes")
    unchanged = serializers.IntegerField(help_text="Cases already here")
    questions_unchanged = serializers.IntegerField()
    files_imported = serializers.IntegerField()
    files_unchanged = serializers.IntegerField()
    files_refused = serializers.IntegerField()
    problems = serializers.ListField(child=serializers.CharField())
    files = FileOutcomeSerializer(many=True, help_text="Every uploaded file, once")

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        fields["import"] = fields.pop("import_")
        return fields


class EchoMindImportView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Import a set in EchoMind's released layout",
        description=(
            "Multipart `files`: a zip, or the layout's files. What is sound is imported; the report "
            "accounts for every file (imported, unchanged or refused, with the reason)."
        ),
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}}},
            }
        },
        responses={201: EchoMindImportReportSerializer, 400: ProblemSerializer},
    )
    def post(self, request: Request) -> Response:
        uploads = request.FILES.getlist("files")
        if not uploads:
            return problem("Send the set as `files` (a zip, or the layout's files).")
        try:
            report = import_layout(uploaded_files(uploads), cast(User, request.user), upload_name(uploads))
        except DeliveryProblem as refused:
            return problem(str(refused))
        return Response(report.as_dict(), status=status.HTTP_201_CREATED)


class EchoMindImportReportView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS

    @extend_schema(
        summary="One EchoMind import's report",
        responses={200: EchoMindImportReportSerializer, 404: ProblemSerializer},
    )
    def get(self, request: Request, import_id: int) -> Response:
        record = get_object_or_404(DeliveryImport, pk=import_id)
        return Response(report_of(record).as_dict())


class EchoMindLeaderboardExportView(APIView):
    permission_classes = [HasRole]
    required_roles = SYSTEM_ADMINS
    fmt = "csv"

    @extend_schema(
        summary="The EchoMind leaderboard as CSV or LaTeX",
        responses={(200, "text/plain"): OpenApiResponse(OpenApiTypes.STR)},
    )
    def get(self, request: Request) -> HttpResponse:
        rows = reports.board()
        text = board_csv(rows) if self.fmt == "csv" else board.to_latex(rows)
        content_type = "text/csv" if self.fmt == "csv" else "text/x-tex"
        return HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
