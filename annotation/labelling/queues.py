"""Work-queue pages of the annotation side (the recording side lives in annotation.recording.views).

Both queues paginate and load each row's item with a join, so a page costs the same handful of
queries with ten items or ten thousand (bench/annotation_page.py measures it).
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import Count, F, Q
from django.http import HttpResponse
from django.shortcuts import render

from annotation.gold import adjudication
from annotation.labelling import drafts
from annotation.labelling import workflows as labelling
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from webapp.http import StudioRequest
from webapp.models import Job
from webapp.roles import Role, role_required

QUEUE_PAGE_SIZE = 25
ADJUDICATION_TABS = ("ready", "in_progress", "gold")


@role_required(Role.ANNOTATOR)
def annotator_queue(request: StudioRequest) -> HttpResponse:
    """The annotator's own assignments: open ones first, or the submitted ones."""
    show_submitted = request.GET.get("show") == "submitted"
    paginator = Paginator(labelling.annotator_queue(request.user, submitted=show_submitted), QUEUE_PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    return render(
        request, "annotation/annotator_queue.html", {"page": page, "show_submitted": show_submitted}
    )


@role_required(Role.LEAD_ANNOTATOR)
def adjudication_queue(request: StudioRequest) -> HttpResponse:
    """Items ready for a gold reference (fast-track where annotators agree), in progress, or gold."""
    tab = request.GET.get("show", "ready")
    tab = tab if tab in ADJUDICATION_TABS else "ready"
    if tab == "ready":
        items = adjudication.with_submitted_annotations(adjudication.items_ready_for_adjudication())
    elif tab == "in_progress":
        items = (
            Item.objects.filter(state=Item.State.ANNOTATING)
            .annotate(
                n_assigned=Count("annotations"),
                n_submitted=Count("annotations", filter=Q(annotations__status=Annotation.Status.SUBMITTED)),
            )
            .exclude(n_submitted=F("n_assigned"), n_submitted__gte=1)
            .order_by("pk")
        )
    else:
        items = Item.objects.filter(state=Item.State.GOLD).order_by("-updated_at", "pk")
    page = Paginator(items, QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [
        (item, tab == "ready" and adjudication.fast_trackable(getattr(item, "submitted", [])))
        for item in page.object_list
    ]
    return render(
        request,
        "annotation/adjudication_queue.html",
        {
            "tab": tab,
            "page": page,
            "rows": rows,
            "waiting_for_annotators": Item.objects.filter(state=Item.State.RECORDED).count(),
            "drafts_enabled": drafts.drafts_enabled(),
            "latest_draft_job": Job.objects.filter(kind=drafts.JOB_KIND).order_by("-created_at").first(),
        },
    )
