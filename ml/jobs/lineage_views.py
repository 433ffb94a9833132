"""The lineage pages (admins): what used a person's work or an item's takes, as a page and as a
JSON download (a withdrawal's report, for the lab to act on)."""

from __future__ import annotations

import json

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.cache import never_cache

from annotation.recording.consent.models import ConsentRecord
from annotation.recording.models import Item
from ml.jobs.access import ML_ROLES
from ml.jobs.lineage import SHOWN, Lineage, item_lineage, person_lineage
from webapp.http import StudioRequest
from webapp.models import User
from webapp.roles import role_required


def _answer(
    request: StudioRequest, lineage: Lineage, context: dict[str, object], filename: str
) -> HttpResponse:
    if request.GET.get("format") == "json":
        response = HttpResponse(
            json.dumps(lineage.as_dict(), indent=2, ensure_ascii=True), content_type="application/json"
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}.json"'
        return response
    return render(
        request,
        "ml/lineage.html",
        {**context, "lineage": lineage, "shown": SHOWN, "take_count": lineage.takes.count()},
    )


@role_required(*ML_ROLES)
@never_cache
def person_lineage_page(request: StudioRequest, user_id: int) -> HttpResponse:
    """Everything that used a person's takes, reviews and labels; their consent beside it."""
    person = get_object_or_404(User, pk=user_id)
    consent = ConsentRecord.objects.current().filter(person=person).select_related("text").first()
    return _answer(
        request, person_lineage(person), {"person": person, "consent": consent}, f"lineage-user-{person.pk}"
    )


@role_required(*ML_ROLES)
@never_cache
def item_lineage_page(request: StudioRequest, item_id: int) -> HttpResponse:
    """Everything that used any take of an item."""
    item = get_object_or_404(Item, pk=item_id)
    return _answer(request, item_lineage(item), {"item": item}, f"lineage-item-{item.pk}")
