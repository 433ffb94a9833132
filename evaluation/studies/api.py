"""The studies API (admins): create a listening study from a design (the page's form and
`create_study`), follow its progress, and read its results with confidence intervals."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.db.models import Count, Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListCreateAPIView
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.studies.access import study_for_admin
from evaluation.studies.comparison_reports import comparison_figures, figures_json
from evaluation.studies.creation.items import StudyDesignError, create_study
from evaluation.studies.forms import StudyForm
from evaluation.studies.models import Study
from evaluation.studies.reports import Progress, objective_table, study_figures, study_progress
from evaluation.studies.results import MIN_CORRELATION_PAIRS
from webapp.api.errors import ProblemSerializer, form_problems, problem
from webapp.api.pagination import NewestFirstPagination
from webapp.models import User
from webapp.roles import HasRole, Role

STUDY_ADMINS = (Role.ADMIN,)


class StudySerializer(serializers.ModelSerializer[Study]):
    systems = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = [
            "id",
            "public_id",
            "name",
            "benchmark_version",
            "dimensions",
            "unit",
            "kind",
            "systems",
            "progress",
            "created_at",
        ]
        read_only_fields = fields

    def get_systems(self, study: Study) -> list[str]:
        """The names of the systems the study compares."""
        return [system.name for system in study.systems.all()]

    def get_progress(self, study: Study) -> dict[str, int]:
        """Submitted ratings over all assignments of every rater."""
        if hasattr(study, "n_done"):
            progress = Progress(done=getattr(study, "n_done"), total=getattr(study, "n_total"))  # noqa: B009
        else:
            progress = study_progress(study)
        return {"done": progress.done, "total": progress.total, "percent": progress.percent}


class StudyDesignSerializer(serializers.Serializer[Any]):
    """The design page's fields; `systems` and `evaluators` are ids, the rest as on the page."""

    name = serializers.CharField()
    systems = serializers.ListField(child=serializers.IntegerField())
    evaluators = serializers.ListField(child=serializers.IntegerField())
    benchmark_version = serializers.CharField(required=False)
    items_per_system = serializers.IntegerField(required=False)
    unit = serializers.ChoiceField(choices=["item", "dialogue"], required=False)
    kind = serializers.ChoiceField(choices=["acr", "ccr", "dcr", "ab", "mushra"], required=False)
    reference_system = serializers.IntegerField(required=False, help_text="A system's id (CCR, MUSHRA)")
    anchors = serializers.ListField(child=serializers.ChoiceField(choices=["low", "mid"]), required=False)
    dialogues_per_system = serializers.IntegerField(required=False)
    same_dialogues_for_all = serializers.BooleanField(required=False)
    ratings_per_output = serializers.IntegerField(required=False)
    dimensions = serializers.ListField(child=serializers.CharField(), required=False)
    training_count = serializers.IntegerField(required=False)
    trap_count = serializers.IntegerField(required=False)
    trap_score = serializers.IntegerField(required=False)
    seed = serializers.IntegerField(required=False)


class StudyListView(ListCreateAPIView[Study]):
    permission_classes = [HasRole]
    required_roles = STUDY_ADMINS
    serializer_class = StudySerializer
    pagination_class = NewestFirstPagination
    parser_classes = [JSONParser]

    def get_queryset(self) -> QuerySet[Study]:
        # Progress counted in the list's one query, not one aggregate per study.
        submitted = Count("assignments", filter=Q(assignments__submitted_at__isnull=False))
        return Study.objects.prefetch_related("systems").annotate(
            n_done=submitted, n_total=Count("assignments")
        )

    @extend_schema(summary="List studies with their progress, newest first")
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Create a study from a design",
        description=(
            "Validated as on the study design page; fields left out take the page's defaults, but a "
            "dialogue study has no practice or trapping conversations unless it asks for them."
        ),
        request=StudyDesignSerializer,
        responses={201: StudySerializer, 400: ProblemSerializer},
        examples=[
            OpenApiExample(
                "MOS of two systems",
                request_only=True,
                value={
                    "name": "MOS round 3",
                    "systems": [1, 2],
                    "evaluators": [7, 8, 9],
                    "items_per_system": 20,
                },
            )
        ],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        given = StudyDesignSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        defaults = {
            name: field.initial for name, field in StudyForm.base_fields.items() if field.initial is not None
        }
        if given.validated_data.get("unit") == Study.Unit.DIALOGUE:
            # A practice or trapping conversation costs every rater a whole conversation: a script
            # asks for them by name (scripts written before dialogue studies had them keep working).
            defaults.update(training_count=0, trap_count=0)
        form = StudyForm({**defaults, "title_for_raters": "Listening study", **given.validated_data})
        if not form.is_valid():
            return problem("The design has problems.", problems=form_problems(form.errors))
        user = request.user
        try:
            study = create_study(form.to_spec(), created_by=user if isinstance(user, User) else None)  # type: ignore[arg-type]
        except StudyDesignError as design_problem:
            return problem(str(design_problem))
        return Response(StudySerializer(study).data, status=status.HTTP_201_CREATED)


class StudyDetailView(APIView):
    permission_classes = [HasRole]
    required_roles = STUDY_ADMINS

    @extend_schema(
        summary="A study and its progress", responses={200: StudySerializer, 404: ProblemSerializer}
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(StudySerializer(study_for_admin(pk)).data)


class StudyResultsView(APIView):
    permission_classes = [HasRole]
    required_roles = STUDY_ADMINS

    @extend_schema(
        summary="A study's results: MOS with confidence intervals, pairwise tests, agreement",
        description=(
            "The figures of the results page (excluded raters left out), with Spearman's rho of each "
            "objective response-audio measure against each audio dimension's MOS (`objective`: "
            "empty when the study rates no audio dimension; `rho` null, with a `note`, under "
            "`min_pairs` rated outputs having both or for a constant measure). A comparison study "
            "(kind ccr, ab, mushra) returns its figures instead: `cmos`, `preference` (Bradley–Terry "
            "scores, win rates), `mushra` boxes, `excluded` raters with reasons and `times`. Each MOS carries "
            "`n_outputs` of `n_expected` (the system's rated outputs in the study) and `comparable`: "
            "a MOS with outputs not yet rated has no `rank`."
        ),
        responses={200: OpenApiTypes.OBJECT, 404: ProblemSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        study = study_for_admin(pk)
        if study.is_comparison:
            return Response(figures_json(comparison_figures(study)))
        _, summary = study_figures(study)
        objective = objective_table(study)
        return Response(
            {
                "systems": list(summary.systems),
                "dimensions": list(summary.dimensions),
                "n_ratings": summary.n_ratings,
                "mos": [{**asdict(cell), "comparable": cell.comparable} for cell in summary.cells.values()],
                "mos_by_turn": [asdict(cell) for cell in summary.by_turn.values()],
                "comparisons": [asdict(comparison) for comparison in summary.comparisons],
                "agreement": [asdict(agreement) for agreement in summary.agreement],
                "raters_included": list(summary.raters_included),
                "raters_excluded": list(summary.raters_excluded),
                "notes": list(summary.notes),
                "objective": {
                    "min_pairs": MIN_CORRELATION_PAIRS,
                    "metrics": [asdict(metric) for metric, _ in objective],
                    "correlations": [
                        asdict(correlation) for _, correlations in objective for correlation in correlations
                    ],
                },
            }
        )
