"""The EchoMind leaderboard API (admins: it names systems), the same numbers as the page."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.echomind import reports
from evaluation.echomind import scoring as board
from evaluation.echomind.scoring import Accuracy
from evaluation.echomind.scoring import to_csv as board_csv
from evaluation.outputs.access import SYSTEM_ADMINS
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
