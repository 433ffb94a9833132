"""EchoMind pages (admins): the delivery sets with their import and export and their questions, the
taxonomy, systems' answers import, the EchoMind leaderboard with its breakdowns and delivery effect,
and listening studies over systems' spoken replies."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.audio.upload import AudioRejected
from annotation.recording.items import assign_items
from annotation.recording.takes import TakeNotAllowed
from evaluation.echomind import reports, taxonomy
from evaluation.echomind import scoring as board
from evaluation.echomind.answers import JUDGE_REPLIES_JOB, import_answers
from evaluation.echomind.deliveries import (
    DeliveryProblem,
    ensure_default_taxonomy,
    import_taxonomy,
    mix_environment_delivery,
    mixable_deliveries,
)
from evaluation.echomind.forms import QuestionForm, ReplyStudyForm
from evaluation.echomind.models import Delivery, DeliveryImport, DeliverySet, Question, VocalAttribute
from evaluation.echomind.replies.listening import create_reply_study, reply_studies
from evaluation.echomind.replies.quality import QUALITY_JOB, replies_to_measure
from evaluation.echomind.scoring import GROUPINGS
from evaluation.echomind.scoring import to_csv as board_csv
from evaluation.echomind.transfer import (
    export_layout,
    import_layout,
    report_of,
    upload_name,
    uploaded_files,
    write_archive,
)
from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from evaluation.studies.design import StudyDesignError
from webapp.archive import archive
from webapp.http import StudioRequest
from webapp.jobs import start_job
from webapp.roles import Role, role_required, users_with_role

QUESTION_REMOVED = "removed on the questions page"


def _uploaded_files(request: StudioRequest) -> dict[str, bytes]:
    return uploaded_files(request.FILES.getlist("files"))


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def delivery_sets(request: StudioRequest) -> HttpResponse:
    """The cases and the state of each delivery; import a set (zip or files) in EchoMind's layout."""
    ensure_default_taxonomy()
    if request.method == "POST":
        try:
            report = import_layout(
                _uploaded_files(request), request.user, upload_name(request.FILES.getlist("files"))
            )
        except DeliveryProblem as problem:
            messages.error(request, str(problem))
            return redirect("evaluation:echomind_sets")
        return redirect("evaluation:echomind_import", import_id=report.import_id)
    return render(
        request,
        "evaluation/echomind/sets.html",
        {
            "cases": reports.delivery_sets_summary(),
            "systems": System.objects.all(),
            "actors": users_with_role(Role.VOICE_ACTOR),
            "mixable": mixable_deliveries(),
            "imports": DeliveryImport.objects.all()[:10],
        },
    )


@role_required(Role.ADMIN)
@require_GET
def import_report(request: StudioRequest, import_id: int) -> HttpResponse:
    """What became of every file of one import: imported, unchanged or refused, and why."""
    record = get_object_or_404(DeliveryImport.objects.select_related("by"), pk=import_id)
    return render(
        request,
        "evaluation/echomind/import_report.html",
        {"record": record, "report": report_of(record)},
    )


@role_required(Role.ADMIN)
@require_POST
def mix_delivery(request: StudioRequest) -> HttpResponse:
    """Make an environment delivery from its case's accepted neutral take and an uploaded background."""
    delivery = get_object_or_404(
        Delivery.objects.select_related("attribute"), pk=request.POST.get("delivery") or 0
    )
    upload = request.FILES.get("background")
    try:
        gain_db = float(request.POST.get("gain_db", "-10"))
    except ValueError:
        gain_db = float("nan")
    if upload is None:
        messages.error(request, "Choose a background clip (an audio file).")
    elif not -60.0 <= gain_db <= 20.0:
        messages.error(request, "The background gain is a number of decibels between -60 and 20.")
    else:
        try:
            take = mix_environment_delivery(delivery, upload.read(), upload.name or "background.wav", gain_db)
        except (DeliveryProblem, AudioRejected, TakeNotAllowed) as refused:  # AudioRejected: the clip
            messages.error(request, f"Not mixed: {refused}")
        else:
            messages.success(
                request,
                f"{delivery.item.external_id}: mixed with {upload.name} at {gain_db:g} dB; take {take.pk} "
                "goes to blind review.",
            )
    return redirect("evaluation:echomind_sets")


@role_required(Role.ADMIN)
@require_POST
def assign_deliveries(request: StudioRequest) -> HttpResponse:
    """Give every delivery not yet recorded to the chosen actors (the recording pipeline's assignment)."""
    actors = list(users_with_role(Role.VOICE_ACTOR).filter(pk__in=request.POST.getlist("actors")))
    if not actors:
        messages.error(request, "Choose at least one actor.")
        return redirect("evaluation:echomind_sets")
    items = Delivery.objects.filter(item__recording__isnull=True).values_list("item_id", flat=True)
    report = assign_items(list(items), actors)
    given = ", ".join(f"{actor}: {count}" for actor, count in report.assigned)
    messages.success(request, f"Assigned deliveries ({given}); {report.skipped} left with their actor.")
    return redirect("evaluation:echomind_sets")


@role_required(Role.ADMIN)
@require_POST
def answers_import(request: StudioRequest) -> HttpResponse:
    system = get_object_or_404(System, pk=request.POST.get("system") or 0)
    upload = request.FILES.get("answers")
    if upload is None:
        messages.error(request, "Choose an answers file (JSONL).")
        return redirect("evaluation:echomind_sets")
    scope = request.POST.get("scope", "")
    report = import_answers(
        system, upload.read(), scope=int(scope) if scope.isdigit() else None, actor=request.user
    )
    if report.problems:
        for problem in report.problems[:20]:
            messages.error(request, problem)
    else:
        messages.success(
            request,
            f"{system}: {report.answers} answers ({report.unparsed} unparseable), "
            f"{report.transcripts} transcripts, {report.replies} replies.",
        )
    return redirect("evaluation:echomind_sets")


@role_required(Role.ADMIN)
@require_POST
def judge(request: StudioRequest) -> HttpResponse:
    """Queue C1-C4 and VES for the replies lacking them, by a judge endpoint (a job with progress)."""
    config = get_object_or_404(JudgeConfig, pk=request.POST.get("judge") or 0, offline_heuristic=False)
    job = start_job(JUDGE_REPLIES_JOB, started_by=request.user, parameters={"judge": config.pk})
    return redirect("job_detail", job_id=job.pk)


@role_required(Role.ADMIN)
@require_GET
def export(request: StudioRequest) -> HttpResponse:
    response = HttpResponse(write_archive(export_layout()), content_type="application/zip")
    response["Content-Disposition"] = 'attachment; filename="echomind-export.zip"'
    return response


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def taxonomy_page(request: StudioRequest) -> HttpResponse:
    """The vocal-attribute taxonomy by dimension; import attributes from JSONL (by code)."""
    ensure_default_taxonomy()
    if request.method == "POST":
        upload = request.FILES.get("taxonomy")
        text = upload.read().decode("utf-8-sig", errors="replace") if upload else ""
        attributes, problems = taxonomy.parse_taxonomy_jsonl(text.splitlines())
        if problems or not attributes:
            for problem in problems[:20] or ["The file holds no attributes."]:
                messages.error(request, problem)
        else:
            created, updated = import_taxonomy(attributes)
            messages.success(request, f"{created} attributes added, {updated} updated.")
        return redirect("evaluation:echomind_taxonomy")
    rows = [(a, taxonomy.SYNONYMS.get(a.code, ())) for a in VocalAttribute.objects.all()]
    return render(request, "evaluation/echomind/taxonomy.html", {"attributes": rows})


@role_required(Role.ADMIN)
@require_GET
def leaderboard(request: StudioRequest) -> HttpResponse:
    results = reports.results()
    return render(
        request,
        "evaluation/echomind/leaderboard.html",
        {
            "headings": board.HEADINGS,
            "rows": [board.cells_with_coverage(row) for row in results.rows],
            "breakdowns": [
                (
                    grouping,
                    [(system, group, acc) for (system, group), acc in results.breakdowns[grouping].items()],
                )
                for grouping in GROUPINGS
            ],
            "effects": results.effects,
            "judges": JudgeConfig.objects.filter(offline_heuristic=False),
            "unmeasured": len(replies_to_measure()),
        },
    )


@role_required(Role.ADMIN)
@require_GET
def leaderboard_export(request: StudioRequest, fmt: str) -> HttpResponse:
    rows = reports.board()
    text = board_csv(rows) if fmt == "csv" else board.to_latex(rows)
    response = HttpResponse(
        text, content_type=f"{'text/csv' if fmt == 'csv' else 'text/x-tex'}; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="echomind-leaderboard.{fmt}"'
    return response


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def questions(request: StudioRequest, set_id: int) -> HttpResponse:
    """A case's multiple-choice questions; add one, asked of one or more of its deliveries."""
    case = get_object_or_404(DeliverySet.objects.select_related("attribute"), pk=set_id)
    form = QuestionForm(request.POST or None, delivery_set=case)
    if request.method == "POST" and form.is_valid():
        made = form.save()
        messages.success(request, f"Added {', '.join(question.question_id for question in made)}.")
        return redirect("evaluation:echomind_questions", set_id=case.pk)
    return _questions_page(request, case, form, None)


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def question_edit(request: StudioRequest, question_id: int) -> HttpResponse:
    """Edit one question; systems' answers to it are read again when its options change."""
    question = get_object_or_404(
        Question.objects.in_use().select_related("delivery__delivery_set"), pk=question_id
    )
    case = question.delivery.delivery_set
    form = QuestionForm(request.POST or None, delivery_set=case, question=question)
    if request.method == "POST" and form.is_valid():
        (saved,) = form.save()
        messages.success(request, f"Saved {saved.question_id}.")
        return redirect("evaluation:echomind_questions", set_id=case.pk)
    return _questions_page(request, case, form, question)


def _questions_page(
    request: StudioRequest, case: DeliverySet, form: QuestionForm, editing: Question | None
) -> HttpResponse:
    asked = Question.objects.in_use().filter(delivery__delivery_set=case).select_related("delivery")
    return render(
        request,
        "evaluation/echomind/questions.html",
        {"case": case, "form": form, "editing": editing, "questions": asked},
    )


@role_required(Role.ADMIN)
@require_POST
def question_delete(request: StudioRequest, question_id: int) -> HttpResponse:
    """Remove a question: archive it, its answers kept out of every score (restorable in the admin)."""
    question = get_object_or_404(Question.objects.in_use().select_related("delivery"), pk=question_id)
    case_id, answers = question.delivery.delivery_set_id, question.answers.in_use().count()
    archive(question, actor=request.user, reason=QUESTION_REMOVED)
    messages.success(
        request,
        f"Archived {question.question_id}; its {answers} answers are kept but no longer scored. "
        "Restore it from the Django admin's questions.",
    )
    return redirect("evaluation:echomind_questions", set_id=case_id)


@role_required(Role.ADMIN)
@require_POST
def measure_quality(request: StudioRequest) -> HttpResponse:
    """Queue DNSMOS of the replies' audio (a job on a worker: the models never load in the web process)."""
    if not replies_to_measure():
        messages.info(request, "Every reply with audio has its DNSMOS already.")
        return redirect("evaluation:echomind_leaderboard")
    job = start_job(QUALITY_JOB, started_by=request.user)
    return redirect("job_detail", job_id=job.pk)


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def reply_study(request: StudioRequest) -> HttpResponse:
    """Design a listening study (MOS by default) over systems' spoken replies to the deliveries."""
    form = ReplyStudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = create_reply_study(form.to_spec(), form.chosen_prompt(), request.user)
        except StudyDesignError as problem:
            form.add_error(None, str(problem))
        else:
            messages.success(request, f"Study “{study.name}” is open to its raters.")
            return redirect("evaluation:study_results", study_id=study.pk)
    return render(request, "evaluation/echomind/reply_study.html", {"form": form, "studies": reply_studies()})
