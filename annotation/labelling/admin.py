"""Django admin for the labelling side: the strategy taxonomy, projects, annotations and drafts.

Admins manage the strategy taxonomy here (rename, reorder, retire with "active"); labels refer to
strategies by slug, so a slug is fixed once used and retiring hides a strategy from new work
without touching existing labels. Every model here is managed by the admin role
(`webapp.roles.RoleAdminAccess`); annotations are further narrowed by `labelling.access`.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from annotation.labelling.access import annotations_visible_to, may_see_others_labels
from annotation.labelling.models import (
    Annotation,
    AnnotationProject,
    AnnotationRevision,
    MachineDraft,
    Strategy,
)
from annotation.recording.models import Scenario, Split
from webapp.models import User
from webapp.roles import Role, RoleAdminAccess, users_with_role


@admin.register(Strategy)
class StrategyAdmin(RoleAdminAccess, admin.ModelAdmin):
    list_display = ("name", "slug", "position", "active")
    list_editable = ("position", "active")
    list_filter = ("active",)
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}

    def get_readonly_fields(self, request: HttpRequest, obj: Strategy | None = None) -> tuple[str, ...]:
        # Labels store the slug: changing it later would orphan every label that used it.
        return ("slug",) if obj is not None else ()

    def get_prepopulated_fields(self, request: HttpRequest, obj: Strategy | None = None) -> dict[str, Any]:
        return {} if obj is not None else dict(self.prepopulated_fields)


class AnnotationProjectForm(forms.ModelForm):
    splits = forms.MultipleChoiceField(
        choices=Split.echoeval_choices(),  # deliveries are never labelled
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: all",
    )
    scenarios = forms.MultipleChoiceField(
        choices=Scenario.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: all",
    )

    class Meta:
        model = AnnotationProject
        fields = [
            "name",
            "description",
            "annotators_per_item",
            "splits",
            "scenarios",
            "annotators",
            "priority",
            "active",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        annotators = self.fields["annotators"]
        assert isinstance(annotators, forms.ModelMultipleChoiceField)
        # Offer active annotators, and keep any inactive one already on the project selectable, so
        # saving the project does not silently drop them.
        offered = Q(pk__in=users_with_role(Role.ANNOTATOR))
        if self.instance.pk:
            offered |= Q(pk__in=self.instance.annotators.all())
        annotators.queryset = User.objects.filter(offered).order_by("username")


@admin.register(AnnotationProject)
class AnnotationProjectAdmin(RoleAdminAccess, admin.ModelAdmin):
    form = AnnotationProjectForm
    list_display = ("name", "annotators_per_item", "splits", "scenarios", "priority", "active")
    list_editable = ("annotators_per_item", "priority", "active")
    filter_horizontal = ("annotators",)


class RevisionInline(RoleAdminAccess, admin.TabularInline):
    model = AnnotationRevision
    extra = 0
    can_delete = False
    max_num = 0  # revisions are written by submitting, never by hand
    readonly_fields = ("version", "perception", "tom", "cross_turn", "saved_at")


@admin.register(Annotation)
class AnnotationAdmin(RoleAdminAccess, admin.ModelAdmin):
    list_display = ("item", "annotator", "status", "version", "updated_at", "submitted_at")
    list_filter = ("status", "item__scenario")
    search_fields = ("item__external_id", "annotator__username")
    raw_id_fields = ("item", "annotator", "machine_draft", "tier_draft")
    readonly_fields = ("version", "changed_from_draft", "suggestions", "assigned_at", "updated_at")
    list_select_related = ("item", "annotator")
    inlines = (RevisionInline,)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) and may_see_others_labels(request.user)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Annotation]:
        # The same rule as the pages: labels are shown only to those who may see them.
        return super().get_queryset(request) & annotations_visible_to(request.user)


@admin.register(MachineDraft)
class MachineDraftAdmin(RoleAdminAccess, admin.ModelAdmin):
    list_display = ("item", "model_name", "prompt_version", "created_at", "error")
    search_fields = ("item__external_id", "error")
    raw_id_fields = ("item",)
    list_select_related = ("item",)
