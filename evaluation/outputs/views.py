"""Pages of systems under evaluation and their output imports (admins)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from evaluation.outputs import reports
from evaluation.outputs.access import query_audio_url, system_for_admin
from evaluation.outputs.audio_sources import AudioSource, AudioSourceRefused, S3AudioSource, ZipAudioSource
from evaluation.outputs.forms import OutputImportForm, SystemForm
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION
from evaluation.outputs.reports import deletion_counts, dialogues_answered_by, system_rows
from webapp.http import StudioRequest
from webapp.roles import Role, role_required
from webapp.storage import audio_url

DIALOGUES_PER_PAGE = 25


@role_required(Role.ADMIN)
@require_GET
def system_list(request: StudioRequest) -> HttpResponse:
    """Every system with its output counts per benchmark version."""
    return render(request, "evaluation/results/systems.html", {"rows": system_rows()})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def system_create(request: StudioRequest) -> HttpResponse:
    """Register a system under evaluation."""
    form = SystemForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        system = form.save()
        messages.success(request, f"System {system.name} registered as {system.anonymous_code}.")
        return redirect("evaluation:output_import", system_id=system.pk)
    return render(request, "evaluation/results/system_form.html", {"form": form, "system": None})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def system_edit(request: StudioRequest, system_id: int) -> HttpResponse:
    """Change a system's name, category, version or text-only flag."""
    system = system_for_admin(system_id)
    form = SystemForm(request.POST or None, request.FILES or None, instance=system)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "System saved.")
        return redirect("evaluation:system_list")
    return render(request, "evaluation/results/system_form.html", {"form": form, "system": system})


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def system_delete(request: StudioRequest, system_id: int) -> HttpResponse:
    """Delete a system that has no outputs, after a confirmation page. A system with outputs is
    kept: its outputs and their judgements are work, archived one by one, never deleted."""
    system = system_for_admin(system_id)
    counts = deletion_counts(system)
    if request.method == "POST":
        name = system.name
        if counts["outputs"]:
            messages.error(
                request, f"System {name} keeps its {counts['outputs']} outputs: it was not deleted."
            )
            return redirect("evaluation:system_list")
        system.delete()
        messages.success(request, f"System {name} and its outputs were deleted.")
        return redirect("evaluation:system_list")
    return render(
        request,
        "evaluation/results/system_delete.html",
        {"system": system, "counts": counts},
    )


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def output_import(request: StudioRequest, system_id: int) -> HttpResponse:
    """Upload a system's outputs (JSONL + audio zip or S3 prefix); shows the validation report."""
    system = system_for_admin(system_id)
    form = OutputImportForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        audio: AudioSource | None = None
        try:
            if form.cleaned_data["audio_zip"]:
                audio = ZipAudioSource(form.cleaned_data["audio_zip"])
            elif form.cleaned_data["s3_prefix"]:
                audio = S3AudioSource(form.cleaned_data["s3_prefix"])
        except AudioSourceRefused as refused:  # not a zip, unsafe names, too big: nothing read
            form.add_error("audio_zip" if form.cleaned_data["audio_zip"] else "s3_prefix", str(refused))
        except Exception as exc:  # an unreachable bucket: say which, keep the form
            form.add_error(None, f"The audio could not be opened: {type(exc).__name__}: {exc}")
        else:
            report = import_outputs(
                system,
                form.cleaned_data["benchmark_version"],
                form.cleaned_data["rows"].read(),
                audio,
                skip_invalid_rows=form.cleaned_data["skip_invalid_rows"],
                format_name=form.cleaned_data["format_name"],
            )
            if report.imported:
                messages.success(
                    request,
                    f"Imported {report.created} new, {report.updated} changed, {report.unchanged} unchanged "
                    f"and removed {report.removed} outputs of {system.name}.",
                )
    return render(
        request, "evaluation/results/output_import.html", {"system": system, "form": form, "report": report}
    )


@role_required(Role.ADMIN)
@require_GET
def dialogue_outputs(request: StudioRequest, system_id: int) -> HttpResponse:
    """A system's answers to dialogue turns, each dialogue's turns in order, a page of dialogues at a time."""
    system = system_for_admin(system_id)
    version = request.GET.get("benchmark_version") or DEFAULT_BENCHMARK_VERSION
    dialogues = list(
        dialogues_answered_by(system, version).filter(pk__gt=_cursor(request))[: DIALOGUES_PER_PAGE + 1]
    )
    groups = [
        (
            group.dialogue,
            [
                (
                    turn.item,
                    turn.output,
                    query_audio_url(turn.item, request.user),
                    audio_url(turn.output.response_audio_key, request.user) if turn.output else "",
                )
                for turn in group.turns
            ],
        )
        for group in reports.dialogue_outputs(system, version, dialogues[:DIALOGUES_PER_PAGE])
    ]
    following = dialogues[DIALOGUES_PER_PAGE - 1].pk if len(dialogues) > DIALOGUES_PER_PAGE else None
    return render(
        request,
        "evaluation/outputs/dialogue_outputs.html",
        {"system": system, "version": version, "groups": groups, "next_after": following},
    )


def _cursor(request: StudioRequest) -> int:
    """Return the id after which the page starts (0: the first page; unreadable: the first page)."""
    value = request.GET.get("after", "")
    return int(value) if value.isdigit() else 0
