"""The agreement dashboard: per-field agreement and each annotator's agreement with gold and peers."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from annotation.gold.access import GOLD_KEEPERS, may_adjudicate
from annotation.gold.agreement.measures import AgreementReport, load_agreement_report
from annotation.labelling.dialogue.cross_turn import CROSS_TURN_CATEGORICAL_FIELDS
from annotation.recording.models import Scenario
from webapp.http import StudioRequest
from webapp.roles import role_required


@role_required(*GOLD_KEEPERS)
def agreement_dashboard(request: StudioRequest) -> HttpResponse:
    """Numbers and charts, optionally for one scenario, so a lead can spot an annotator who drifts."""
    scenario = request.GET.get("scenario", "")
    scenario = scenario if scenario in Scenario.values else ""
    report = load_agreement_report(request.user, scenario or None)
    alpha_fields = [row for row in report.fields if row.measure.startswith("alpha")]
    set_fields = [row for row in report.fields if not row.measure.startswith("alpha")]
    chart_data = {
        "alpha": {
            "labels": [row.label for row in alpha_fields],
            "values": [row.value for row in alpha_fields],
        },
        "sets": {
            "labels": sorted({row.label for row in set_fields}, key=[r.label for r in set_fields].index),
            "masi": [row.value for row in set_fields if row.measure == "MASI"],
            "jaccard": [row.value for row in set_fields if row.measure == "Jaccard"],
        },
        "annotators": {
            "labels": [row.annotator for row in report.annotators],
            "with_gold": [row.with_gold for row in report.annotators],
            "sets_with_gold": [row.sets_with_gold for row in report.annotators],
            "with_peers": [row.with_peers for row in report.annotators],
        },
        "drift": [
            {"annotator": point.annotator, "week": point.week.isoformat(), "value": point.with_gold}
            for point in report.drift
        ],
    }
    chart_data["turns"] = turn_chart(report)
    per_field_names = [
        row.field for row in alpha_fields if row.field not in CROSS_TURN_CATEGORICAL_FIELDS
    ] + [row.field for row in set_fields if row.measure == "MASI"]
    labels = {row.field: row.label for row in report.fields}
    return render(
        request,
        "annotation/labelling/agreement.html",
        {
            "report": report,
            "scenario": scenario,
            "is_lead": may_adjudicate(request.user),
            "scenarios": Scenario.choices,
            "turn_headers": [label for _, label in TURN_CHART_FIELDS],
            "turn_rows": [
                (row, [by_field.get(name) for name, _ in TURN_CHART_FIELDS])
                for row in report.turns
                for by_field in [{entry.field: entry for entry in row.fields}]
            ],
            "chart_data": chart_data,
            # Fields down the side, annotators across: eleven fields beside the summary columns made
            # one table wider than the page; a team's annotators fit across it.
            "field_rows": [
                (labels[name], [row.per_field.get(name) for row in report.annotators])
                for name in per_field_names
            ],
        },
    )


# The fields the per-turn breakdown shows (alpha per dialogue turn number).
TURN_CHART_FIELDS = (
    ("polarity", "Polarity"),
    ("emotion", "Emotion"),
    ("intensity", "Intensity"),
    ("emotion_change", "Emotion change"),
    ("last_strategy_helped", "Last strategy helped"),
)


def turn_chart(report: AgreementReport) -> dict[str, object]:
    """Return the per-turn chart's data: one line per field, alpha at each dialogue turn number."""
    values = {row.turn: {entry.field: entry.value for entry in row.fields} for row in report.turns}
    return {
        "labels": [f"turn {row.turn}" for row in report.turns],
        "series": [
            {"label": label, "values": [values[row.turn].get(name) for row in report.turns]}
            for name, label in TURN_CHART_FIELDS
        ],
    }
