"""The gold page: export the gold references as a downloadable archive, import an export."""

from __future__ import annotations

from typing import cast

from django.contrib import messages
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from annotation.audio.speech.tiers import MAX_FILE_BYTES, TierFileError
from annotation.gold import reports, tier_export
from annotation.gold.access import EXPORT_STILL_LABELLING, GOLD_KEEPERS, export_refusal, gold_refusal
from annotation.gold.datasheet import DEFAULT_LICENCE, DEFAULT_MOTIVATION, Release
from annotation.gold.models import GoldReference
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.labelling.tier_import import import_tier_draft
from annotation.recording.models import Item, Scenario, Split
from webapp.http import StudioRequest
from webapp.models import Job
from webapp.roles import role_required


@role_required(*GOLD_KEEPERS)
@never_cache
def gold_page(request: StudioRequest) -> HttpResponse:
    """Export and import forms and the latest transfers; htmx refreshes the list while jobs run."""
    context = {
        **reports.gold_transfers(request.user),
        "scenarios": Scenario.choices,
        "splits": Split.echoeval_choices(),
        "default_licence": DEFAULT_LICENCE,
        "default_motivation": DEFAULT_MOTIVATION,
    }
    template = (
        "annotation/labelling/gold.html#transfers" if request.htmx else "annotation/labelling/gold.html"
    )
    return render(request, template, context)


@role_required(*GOLD_KEEPERS)
@require_POST
def start_export(request: StudioRequest) -> HttpResponse:
    """Queue an export job."""
    scenario = request.POST.get("scenario", "")
    split = request.POST.get("split", "")
    release = None
    if request.POST.get("release"):
        release = Release(
            licence=request.POST.get("licence", "").strip() or DEFAULT_LICENCE,
            motivation=request.POST.get("motivation", "").strip() or DEFAULT_MOTIVATION,
        )
    job = transfer_jobs.start_export(
        started_by=request.user,
        scenario=scenario if scenario in Scenario.values else "",
        split=split if split in Split.values else "",
        release=release,
    )
    messages.success(request, f"Export #{job.pk} queued.")
    return redirect("annotation:gold")


@role_required(*GOLD_KEEPERS)
@require_POST
def start_import(request: StudioRequest) -> HttpResponse:
    """Store the uploaded export and queue its import."""
    upload = request.FILES.get("export")
    if upload is None:
        messages.error(request, "Choose a file to import.")
        return redirect("annotation:gold")
    try:
        job = transfer_jobs.start_import(started_by=request.user, name=upload.name or "", data=upload)
    except transfer_jobs.UploadRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(request, f"Import #{job.pk} queued.")
    return redirect("annotation:gold")


@role_required(*GOLD_KEEPERS)
def download_export(request: StudioRequest, job_id: int) -> HttpResponse:
    """Send a finished export's archive."""
    job = get_object_or_404(Job, pk=job_id, kind=transfer_jobs.EXPORT_KIND)
    refusal = export_refusal(request.user, job)
    if refusal == EXPORT_STILL_LABELLING:
        messages.error(request, refusal)
        return redirect("annotation:gold")
    if refusal is not None:
        raise Http404(refusal)
    key = transfer_jobs.archive_of(job)
    if key is None:
        raise Http404("This export has no archive (it failed, or is not finished yet).")
    stamp = timezone.localtime(job.finished_at or job.created_at).strftime("%Y%m%d-%H%M")
    response = FileResponse(
        default_storage.open(key, "rb"), as_attachment=True, filename=f"echoeval-gold-{stamp}.zip"
    )
    # Streamed (an archive carries all the audio); role_required passes any response through untouched.
    return cast(HttpResponse, response)


@role_required(*GOLD_KEEPERS)
@never_cache
def item_tiers_download(request: StudioRequest, item_id: int) -> HttpResponse:
    """One item's take as a TextGrid or .eaf (?format=): its words, and its gold's labels when the
    reader may see them."""
    format_name = request.GET.get("format", "textgrid")
    if format_name not in tier_export.FORMATS:
        raise Http404("No such tier format.")
    item = get_object_or_404(Item.objects.select_related("recording"), pk=item_id)
    gold = None if gold_refusal(request.user, item) else GoldReference.objects.current_of(item)
    tiers = tier_export.item_tiers(item, gold)
    if tiers is None:
        raise Http404(f"{item.external_id} has no accepted take.")
    name, data = tier_export.tier_file(item, tiers, format_name)
    return _attachment(data, name)


@role_required(*GOLD_KEEPERS)
@never_cache
def tiers_download(request: StudioRequest) -> HttpResponse:
    """Every take's tiers, one file an item, in a zip (?format=textgrid or eaf)."""
    format_name = request.GET.get("format", "textgrid")
    if format_name not in tier_export.FORMATS:
        raise Http404("No such tier format.")
    data, _ = tier_export.tiers_zip(format_name, request.user)
    return _attachment(data, f"echoeval-tiers-{format_name}.zip")


def _attachment(data: bytes, name: str) -> HttpResponse:
    response = HttpResponse(data, content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@role_required(*GOLD_KEEPERS)
@require_POST
def tier_import(request: StudioRequest) -> HttpResponse:
    """A TextGrid or .eaf of one item's take, kept as a machine draft its annotators start from."""
    upload = request.FILES.get("tiers")
    item = (
        Item.objects.select_related("recording")
        .filter(external_id=request.POST.get("item", "").strip())
        .first()
    )
    if upload is None or item is None:
        messages.error(request, "Give an item id that exists and a .TextGrid or .eaf file.")
        return redirect("annotation:gold")
    if upload.size is not None and upload.size > MAX_FILE_BYTES:
        messages.error(
            request, f"{upload.name}: the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB."
        )
        return redirect("annotation:gold")
    try:
        draft = import_tier_draft(item, upload.name or "", upload.read(), request.user)
    except TierFileError as refused:
        messages.error(request, f"{upload.name}: {refused}. Nothing was imported.")
    else:
        fields = ", ".join(sorted(draft.perception))
        messages.success(
            request, f"{upload.name} is a draft of {item.external_id} ({fields}); annotators start from it."
        )
    return redirect("annotation:gold")
