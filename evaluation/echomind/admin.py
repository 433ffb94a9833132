"""Django admin for the EchoMind taxonomy and questions (role-gated like every studio admin page)."""

from __future__ import annotations

from django.contrib import admin

from evaluation.echomind.models import DeliverySet, Question, VocalAttribute
from webapp.roles import RoleAdminAccess


@admin.register(VocalAttribute)
class VocalAttributeAdmin(RoleAdminAccess, admin.ModelAdmin):
    list_display = ("label", "code", "coarse", "fine", "position")
    list_filter = ("coarse", "fine")
    search_fields = ("label", "code")


@admin.register(DeliverySet)
class DeliverySetAdmin(RoleAdminAccess, admin.ModelAdmin):
    list_display = ("case_id", "script_type", "topic", "attribute")
    search_fields = ("case_id", "text")


@admin.register(Question)
class QuestionAdmin(RoleAdminAccess, admin.ModelAdmin):
    # Removed on the questions page means archived: restore it here ("archived" filter, restore action).
    list_display = ("question_id", "level", "question_type", "answer", "archived_at", "archive_reason")
    list_filter = ("level", "question_type")
    search_fields = ("question_id", "text")
