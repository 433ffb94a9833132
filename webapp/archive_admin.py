"""The Django admin's side of archiving: what `webapp.roles.RoleAdminAccess` gives every model
admin of a work product (`webapp.models.Archivable`).

A work product is viewed in the admin, never added, changed or deleted there: its fields belong
to the workflow that wrote it (a verdict, a submitted label, a gold version). What an admin may
do is archive it, saying why, and restore it; both go through `webapp.archive` and are logged.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from webapp.archive import ArchiveError, archive, restore
from webapp.models import Archivable

REASON_FIELD = "archive_reason"


def is_archivable(model: type[Model]) -> bool:
    """Return True for a model whose rows are archived rather than deleted."""
    return issubclass(model, Archivable)


def is_work_product(model: type[Model]) -> bool:
    """Return True for a model of people's work: never added, changed or deleted in the admin."""
    return issubclass(model, Archivable) and model.work_product


@admin.action(description="Archive the selected rows (asks why)", permissions=["archive"])
def archive_selected(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
    reason = request.POST.get(REASON_FIELD, "").strip()
    if "apply" not in request.POST or not reason:
        return TemplateResponse(
            request,
            "admin/archive_confirm.html",
            {
                **modeladmin.admin_site.each_context(request),
                "opts": modeladmin.model._meta,
                "title": "Archive: say why",
                "rows": queryset,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "reason_missing": "apply" in request.POST,
            },
        )
    done = 0
    for row in queryset:
        try:
            archive(row, actor=request.user, reason=reason)  # type: ignore[arg-type]
            done += 1
        except ArchiveError as refused:
            modeladmin.message_user(request, str(refused), messages.WARNING)
    modeladmin.message_user(request, f"{done} archived; restore them from the “archived” filter.")
    return None


@admin.action(description="Restore the selected archived rows", permissions=["archive"])
def restore_selected(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> None:
    done = 0
    for row in queryset:
        try:
            restore(row, actor=request.user)  # type: ignore[arg-type]
            done += 1
        except ArchiveError as refused:
            modeladmin.message_user(request, str(refused), messages.WARNING)
    modeladmin.message_user(request, f"{done} restored.")


class ArchivedFilter(admin.SimpleListFilter):
    """In use or archived: the admin's list shows both, and says which."""

    title = "archived"
    parameter_name = "archived"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "In use"), ("yes", "Archived")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "no":
            return queryset.filter(archived_at__isnull=True)
        if self.value() == "yes":
            return queryset.filter(archived_at__isnull=False)
        return queryset
