"""Django admin for the builder: the taxonomy is edited here; builds, samples and spot-checks are read here.

Who may use these pages is ``ml.builder.access.BUILDER_ROLES`` (admins), as for the training pages.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from ml.builder.access import BUILDER_ROLES
from ml.builder.config import BuildConfig, ConfigProblem
from ml.builder.models import (
    Build,
    BuildSample,
    BuildStage,
    SpotCheck,
    TaxonomyDomain,
    TaxonomySubcategory,
    TaxonomyTopic,
)
from webapp.outbound import record_url_changes
from webapp.roles import RoleAdminAccess


def _endpoint_urls(config: Any) -> dict[str, str]:
    try:
        return BuildConfig.from_json(config).endpoint_urls()
    except ConfigProblem:
        return {}


class SubcategoryInline(RoleAdminAccess, admin.TabularInline):
    # Inlines ask the role rule too: a studio admin is not a superuser and holds no model permissions.
    admin_roles = BUILDER_ROLES
    model = TaxonomySubcategory
    extra = 0


@admin.register(TaxonomyDomain)
class TaxonomyDomainAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = BUILDER_ROLES
    list_display = ("name", "description")
    search_fields = ("name",)
    inlines = (SubcategoryInline,)


@admin.register(TaxonomySubcategory)
class TaxonomySubcategoryAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = BUILDER_ROLES
    list_display = ("name", "domain")
    list_filter = ("domain",)
    search_fields = ("name", "domain__name")


@admin.register(TaxonomyTopic)
class TaxonomyTopicAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = BUILDER_ROLES
    list_display = ("name", "subcategory", "active")
    list_filter = ("active", "subcategory__domain")
    list_editable = ("active",)
    search_fields = ("name", "subcategory__name", "subcategory__domain__name")


class BuildStageInline(RoleAdminAccess, admin.TabularInline):
    admin_roles = BUILDER_ROLES
    model = BuildStage
    extra = 0
    can_delete = False
    fields = ("stage", "status", "version", "counts", "cost", "job", "started_at", "finished_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        # Stage rows are made by the runner when a build starts.
        return False


class BuildAdminForm(forms.ModelForm):
    """A build's configuration is checked on save by the rule every stage job reads it with
    (``BuildConfig.from_json``): one the builder would refuse is never stored, so no build page
    or stage job meets it."""

    class Meta:
        model = Build
        # Admin shows these fields and BuildAdmin.readonly_fields.
        fields = ("name", "single_turn_count", "dialogue_count", "turns_per_dialogue", "seed", "config")

    def clean_config(self) -> Any:
        config = self.cleaned_data.get("config")
        if not isinstance(config, dict):
            raise ValidationError('The configuration is a JSON object: {"endpoints": [...], ...}.')
        try:
            BuildConfig.from_json(config)
        except ConfigProblem as problem:
            raise ValidationError(f"This configuration cannot run: {problem}.") from problem
        return config


@admin.register(Build)
class BuildAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = BUILDER_ROLES
    form = BuildAdminForm
    list_display = ("name", "status", "single_turn_count", "dialogue_count", "created_at", "exported_at")
    list_filter = ("status",)
    readonly_fields = ("status", "provenance", "export_path", "exported_at", "created_by", "created_at")
    inlines = (BuildStageInline,)

    def save_model(self, request: HttpRequest, obj: Build, form: Any, change: bool) -> None:
        # Every endpoint URL a build's configuration changes to is recorded: who, when, old, new.
        before = Build.objects.filter(pk=obj.pk).values_list("config", flat=True).first() if change else None
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            record_url_changes(
                request.user,  # type: ignore[arg-type]
                f"build {obj.name}",
                _endpoint_urls(before) if before is not None else {},
                _endpoint_urls(obj.config),
            )


@admin.register(BuildSample)
class BuildSampleAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = BUILDER_ROLES
    list_display = (
        "external_id",
        "build",
        "emotion",
        "intensity",
        "prompt_variant",
        "status",
        "dropped_at",
        "drop_reason",
    )
    list_filter = ("build", "status", "dropped_at", "emotion", "prompt_variant")
    search_fields = ("external_id", "text")
    raw_id_fields = ("build", "dialogue", "topic")

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        # Samples are the pipeline's record; corrections go through the spot-check queue.
        return False


@admin.register(SpotCheck)
class SpotCheckAdmin(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = BUILDER_ROLES
    list_display = ("sample", "build", "annotator", "verdict", "stage", "submitted_at")
    list_filter = ("build", "verdict", "stage")
    raw_id_fields = ("build", "sample", "annotator")
