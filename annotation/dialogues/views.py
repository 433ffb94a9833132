"""Pages of dialogues: the list, one dialogue's trajectory turn by turn, JSONL import and export, preview."""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, cast

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.dialogues.access import (
    DIALOGUE_VIEWERS,
    dialogue_for_viewer,
    dialogues_for,
    may_manage_dialogues,
)
from annotation.dialogues.forms import DialogueImportForm
from annotation.dialogues.preview import build_preview, existing_preview
from annotation.dialogues.transfer import export_dialogues, import_dialogues
from annotation.recording.conversation.history import take_to_play
from annotation.recording.models import Item, Take
from annotation.recording.takes import recordable_refusal
from webapp.http import StudioRequest
from webapp.roles import Role, role_required
from webapp.storage import audio_url

DIALOGUES_PER_PAGE = 50
MAX_IMPORT_BYTES = 64 * 2**20  # a dialogue is a few KB: 64 MB is tens of thousands of them
IMPORT_ERRORS_SHOWN = 200
RECORDED_STATES = (Item.State.RECORDED, Item.State.ANNOTATING, Item.State.GOLD)


@dataclass(frozen=True)
class TurnRow:
    item: Item
    take: Take | None  # the take standing for the turn (the viewer's own for an actor)
    take_url: str
    may_record_now: bool  # for the actor: the recorder takes this turn now


@role_required(*DIALOGUE_VIEWERS)
def dialogue_list(request: StudioRequest) -> HttpResponse:
    """Dialogues with their turns' progress: every one for an admin, an actor's own for an actor."""
    dialogues = dialogues_for(request.user).annotate(
        turn_count=Count("turns"),
        recorded=Count("turns", filter=Q(turns__state__in=RECORDED_STATES)),
        in_review=Count("turns", filter=Q(turns__state=Item.State.IN_REVIEW)),
    )
    page = Paginator(dialogues.order_by("external_id"), DIALOGUES_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/dialogues/list.html",
        {"page": page, "is_admin": may_manage_dialogues(request.user)},
    )


@role_required(*DIALOGUE_VIEWERS)
def dialogue_detail(request: StudioRequest, external_id: str) -> HttpResponse:
    """One dialogue's planned trajectory turn by turn and each turn's state; the preview for admins."""
    dialogue = dialogue_for_viewer(request.user, external_id)
    is_admin = may_manage_dialogues(request.user)
    turns = dialogue.turns.order_by("turn").select_related("actor")
    rows = []
    for item in turns:
        take = take_to_play(item, None if is_admin else request.user)
        rows.append(
            TurnRow(
                item,
                take,
                audio_url(take.audio_key, request.user) if take else "",
                not is_admin and recordable_refusal(item, request.user) is None,
            )
        )
    preview = existing_preview(dialogue) if is_admin else ""
    return render(
        request,
        "annotation/dialogues/detail.html",
        {
            "dialogue": dialogue,
            "rows": rows,
            "is_admin": is_admin,
            "actor": next((row.item.actor for row in rows if row.item.actor), None) if is_admin else None,
            "preview_url": audio_url(preview, request.user) if preview else "",
            "can_preview": is_admin and any(row.take for row in rows),
        },
    )


@role_required(Role.ADMIN)
@require_POST
def dialogue_preview(request: StudioRequest, external_id: str) -> HttpResponse:
    """Join the recorded turns and replies into the preview (made once per set of takes)."""
    dialogue = dialogue_for_viewer(request.user, external_id)
    if build_preview(dialogue):
        messages.success(request, "The preview is ready below.")
    else:
        messages.error(request, "No turn of this dialogue has a take yet: there is nothing to preview.")
    return redirect("annotation:dialogue_detail", external_id=dialogue.external_id)


@role_required(Role.ADMIN)
def import_dialogues_page(request: StudioRequest) -> HttpResponse:
    """Upload a JSONL file of dialogues: all imported, or nothing and every problem listed."""
    form = DialogueImportForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            form.add_error("file", f"The file is larger than {MAX_IMPORT_BYTES // 2**20} MB; split it.")
        else:
            report = import_dialogues(cast(BinaryIO, upload))
    return render(
        request,
        "annotation/dialogues/import.html",
        {
            "form": form,
            "report": report,
            "max_turns": settings.DIALOGUE_MAX_TURNS,
            "errors_shown": report.errors[:IMPORT_ERRORS_SHOWN] if report else [],
            "errors_hidden": max(0, len(report.errors) - IMPORT_ERRORS_SHOWN) if report else 0,
        },
    )


@role_required(Role.ADMIN)
def export_dialogues_download(request: StudioRequest) -> HttpResponse:
    """Every dialogue as JSONL (the import's shape), streamed."""
    response = StreamingHttpResponse(export_dialogues(), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="dialogues.jsonl"'
    return cast(HttpResponse, response)  # role_required wraps views answering HttpResponse
