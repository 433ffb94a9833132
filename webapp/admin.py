from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from webapp.models import Job, User


@admin.register(User)
class EchoUserAdmin(UserAdmin):
    fieldsets = (*UserAdmin.fieldsets, ("EchoStudio", {"fields": ("display_name",)}))  # type: ignore[misc]
    list_display = ("username", "display_name", "email", "is_staff")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "progress", "started_by", "created_at", "finished_at")
    list_filter = ("kind", "status")
    readonly_fields = ("created_at", "started_at", "finished_at", "heartbeat_at")
