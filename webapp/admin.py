"""Django admin for people, roles, jobs and login lockouts, managed by the Admin role.

Every model admin in EchoStudio asks `webapp.roles.RoleAdminAccess` who may use it, so an
Admin-role user who is not a superuser manages people, items, takes, reviews, jobs and
checkpoints. What only a superuser may do stays so: make superusers or hand out Django
permissions, touch a superuser's account, edit the role groups (code defines them), delete a
person (deactivate instead: their recordings and labels stay attributed).
"""

from __future__ import annotations

import json
from typing import Any

from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.core.serializers.json import DjangoJSONEncoder
from django.forms import ModelForm
from django.http import HttpRequest, StreamingHttpResponse
from django.urls import URLPattern, path

from webapp.lib.spreadsheet import csv_row
from webapp.models import AuditEntry, EndpointUrlChange, Job, User
from webapp.roles import RoleAdminAccess, apply_role_implications, record_role_change, role_names


@admin.register(User)
class EchoUserAdmin(RoleAdminAccess, UserAdmin):
    fieldsets = (*UserAdmin.fieldsets, ("EchoStudio", {"fields": ("display_name",)}))  # type: ignore[misc]
    list_display = ("username", "display_name", "email", "is_active", "is_staff")
    list_filter = ("is_active", "is_staff", "groups")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if request.user.is_superuser:
            return ()
        return ("is_superuser", "user_permissions", "last_login", "date_joined")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A superuser's account (password included) is changed only by a superuser.
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def save_related(self, request: HttpRequest, form: ModelForm[Any], formsets: Any, change: bool) -> None:
        # The admin's change view runs in one transaction: the log entry commits with the groups.
        before = role_names(form.instance) if change else []
        super().save_related(request, form, formsets, change)
        apply_role_implications(form.instance)
        record_role_change(request.user, form.instance, before)  # type: ignore[arg-type]


admin.site.unregister(Group)


@admin.register(Group)
class RoleGroupAdmin(RoleAdminAccess, GroupAdmin):
    """The role groups, readable by admins; their permissions are defined in webapp.roles."""

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return bool(request.user.is_superuser)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


@admin.register(Job)
class JobAdmin(RoleAdminAccess, admin.ModelAdmin):
    list_display = ("id", "kind", "status", "progress", "started_by", "created_at", "finished_at")
    list_filter = ("kind", "status")
    readonly_fields = ("created_at", "started_at", "finished_at", "heartbeat_at")


class LoginRecordAccess(RoleAdminAccess):
    """Login records are written by django-axes; admins read them and delete attempts to unlock."""

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False


for model in (AccessAttempt, AccessLog, AccessFailureLog):
    admin.site.unregister(model)


@admin.register(AccessAttempt)
class StudioAccessAttemptAdmin(LoginRecordAccess, AccessAttemptAdmin):
    pass


@admin.register(AccessLog)
class StudioAccessLogAdmin(LoginRecordAccess, AccessLogAdmin):
    pass


@admin.register(AccessFailureLog)
class StudioAccessFailureLogAdmin(LoginRecordAccess, AccessFailureLogAdmin):
    pass


@admin.register(EndpointUrlChange)
class EndpointUrlChangeAdmin(RoleAdminAccess, admin.ModelAdmin):
    """The record of endpoint URL changes: read here, never written or rewritten by hand."""

    list_display = ("changed_at", "endpoint", "old_url", "new_url", "changed_by")
    search_fields = ("endpoint", "old_url", "new_url")

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


AUDIT_CSV_COLUMNS = ("at", "actor", "action", "object_type", "object_id", "object", "before", "after")


@admin.register(AuditEntry)
class AuditEntryAdmin(RoleAdminAccess, admin.ModelAdmin):
    """The audit log: filtered by actor, object type, action and date, and exported as CSV with the
    same filters. Append-only: nothing is added, changed or deleted here (nor anywhere else)."""

    list_display = ("at", "actor_name", "action", "content_type", "object_id", "object_repr")
    list_filter = ("action", "content_type", ("at", admin.DateFieldListFilter), "actor")
    search_fields = ("actor_name", "object_repr", "object_id")
    date_hierarchy = "at"
    list_select_related = ("content_type",)
    change_list_template = "admin/webapp/auditentry/change_list.html"
    readonly_fields = (
        "at",
        "actor",
        "actor_name",
        "action",
        "content_type",
        "object_id",
        "object_repr",
        "before",
        "after",
    )

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        export = path(
            "export.csv", self.admin_site.admin_view(self.export_csv), name="webapp_auditentry_export"
        )
        return [export, *super().get_urls()]

    def export_csv(self, request: HttpRequest) -> StreamingHttpResponse:
        """Stream the entries the list's filters (the same query string) select, as CSV."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        entries = self.get_changelist_instance(request).get_queryset(request)

        def lines() -> Any:
            yield csv_row(AUDIT_CSV_COLUMNS)
            for entry in entries.iterator(chunk_size=2000):
                yield csv_row(
                    (
                        entry.at.isoformat(),
                        entry.actor_name or "system",
                        entry.action,
                        f"{entry.content_type.app_label}.{entry.content_type.model}",
                        entry.object_id,
                        entry.object_repr,
                        json.dumps(entry.before, sort_keys=True, cls=DjangoJSONEncoder),
                        json.dumps(entry.after, sort_keys=True, cls=DjangoJSONEncoder),
                    )
                )

        response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="audit-log.csv"'
        return response
