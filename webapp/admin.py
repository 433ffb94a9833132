"""Django admin for people, roles, jobs and login lockouts, managed by the Admin role.

Every model admin in EchoStudio asks `webapp.roles.RoleAdminAccess` who may use it, so an
Admin-role user who is not a superuser manages people, items, takes, reviews, jobs and
checkpoints. What only a superuser may do stays so: make superusers or hand out Django
permissions, touch a superuser's account, edit the role groups (code defines them), delete a
person (deactivate instead: their recordings and labels stay attributed).
"""

from __future__ import annotations

from typing import Any

from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.forms import ModelForm
from django.http import HttpRequest

from webapp.models import EndpointUrlChange, Job, User
from webapp.roles import RoleAdminAccess, apply_role_implications


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
        super().save_related(request, form, formsets, change)
        apply_role_implications(form.instance)


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
