"""Django admin for gold references: viewable by studio admins, made only by adjudication or import."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from annotation.gold.access import gold_hidden_from, may_edit_gold_by_hand
from annotation.gold.models import GoldReference
from webapp.roles import RoleAdminAccess


@admin.register(GoldReference)
class GoldReferenceAdmin(RoleAdminAccess, admin.ModelAdmin):
    """Gold is made by adjudication or import and kept as history: viewable, never added or deleted here."""

    list_display = (
        "item",
        "version",
        "is_current",
        "adjudicated_by",
        "fast_tracked",
        "imported",
        "created_at",
    )
    list_filter = ("is_current", "fast_tracked", "imported", "item__scenario")
    search_fields = ("item__external_id",)
    raw_id_fields = ("item", "adjudicated_by")
    readonly_fields = ("source_annotations", "created_at")
    list_select_related = ("item", "adjudicated_by")

    def get_queryset(self, request: HttpRequest) -> QuerySet[GoldReference]:
        # Not the gold of an item the admin is still labelling (`gold.access.gold_refusal`).
        return super().get_queryset(request).exclude(item_id__in=gold_hidden_from(request.user))

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return may_edit_gold_by_hand(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_edit_gold_by_hand(request.user)
