"""The six roles of EchoStudio as groups, and the checks every view uses.

Roles are Django groups so admins manage people in the Django admin; code asks `has_role`, never
group names directly. The lead annotator is an annotator with one extra group. The groups carry no
Django permissions: every check is a role check here, so a per-model permission granted in the
admin could only suggest an access that no view would honour.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any, ClassVar, TypeVar, cast

from django.contrib.auth.models import AnonymousUser, Group
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import F, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from webapp import audit
from webapp.archive_admin import (
    ArchivedFilter,
    archive_selected,
    is_archivable,
    is_work_product,
    restore_selected,
)
from webapp.models import User


class Role(enum.StrEnum):
    VOICE_ACTOR = "voice_actor"
    REVIEWER = "reviewer"
    ANNOTATOR = "annotator"
    LEAD_ANNOTATOR = "lead_annotator"
    EVALUATOR = "evaluator"
    ADMIN = "admin"

    @property
    def label(self) -> str:
        return ROLE_LABELS[self]


ROLE_LABELS = {
    Role.VOICE_ACTOR: "Voice actor",
    Role.REVIEWER: "Reviewer",
    Role.ANNOTATOR: "Annotator",
    Role.LEAD_ANNOTATOR: "Lead annotator",
    Role.EVALUATOR: "Evaluator",
    Role.ADMIN: "Admin",
}

# Where each role's work queue lives; the first role a user holds in this order is their landing page.
ROLE_HOME_URL_NAMES: dict[Role, str] = {
    Role.ADMIN: "annotation:admin_dashboard",
    Role.LEAD_ANNOTATOR: "annotation:adjudication_queue",
    Role.ANNOTATOR: "annotation:annotator_queue",
    Role.REVIEWER: "annotation:review_queue",
    Role.EVALUATOR: "evaluation:evaluator_queue",
    Role.VOICE_ACTOR: "annotation:actor_queue",
}


def ensure_role_groups() -> dict[Role, Group]:
    """Create one group per role (the role's name is all a group carries)."""
    return {role: Group.objects.get_or_create(name=role.label)[0] for role in Role}


def grant_role(user: User, role: Role, *, actor: User | None = None) -> None:
    """Add the user to the role's group (a lead annotator is also an annotator), logged as granted
    by `actor` (None: the system, e.g. seeding) when it changed their roles."""
    with transaction.atomic():
        before = role_names(user)
        user.groups.add(ensure_role_groups()[role])
        apply_role_implications(user)
        record_role_change(actor, user, before)


def role_names(user: User) -> list[str]:
    """Return the user's role names as stored (sorted), for the audit log's before and after."""
    _forget_cached_roles(user)
    return sorted(role.value for role in user_roles(user))


def record_role_change(actor: User | None, user: User, before: list[str]) -> None:
    """Log a change of the user's roles from `before` (`role_names`) to what they hold now, if any.
    Call inside the transaction that changed them."""
    after = role_names(user)
    if after != before:
        audit.record(
            actor=actor, action=audit.ROLE_GRANT, obj=user, before={"roles": before}, after={"roles": after}
        )


def apply_role_implications(user: User) -> None:
    """Give what a held role implies: a lead is also an annotator; an admin is staff (Django admin
    opens only to staff). Called however roles were granted, by code or in Django admin."""
    _forget_cached_roles(user)
    held = user_roles(user)
    if Role.LEAD_ANNOTATOR in held and Role.ANNOTATOR not in held:
        user.groups.add(ensure_role_groups()[Role.ANNOTATOR])
    if Role.ADMIN in held and not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    _forget_cached_roles(user)


def user_roles(user: User | AnonymousUser) -> frozenset[Role]:
    """Return the roles the user holds (cached on the user object for the request)."""
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_echostudio_roles", None)
    if cached is not None:
        return cast(frozenset[Role], cached)
    by_label = {role.label: role for role in Role}
    names = user.groups.values_list("name", flat=True)
    return _remember_roles(user, {by_label[name] for name in names if name in by_label})


def with_group_names(rows: QuerySet[Any], user: str) -> QuerySet[Any]:
    """Return `rows` (reads that load a user along the relation `user`) once per group the user is
    in, each with that group's name as `group_name` (None when in none): the user's roles come in
    the same read. A join, not a subquery per role: a tenth of the ORM's compile time (issue 27)."""
    return rows.annotate(group_name=F(f"{user}__groups__name"))


def remember_roles_of(user: User, rows: Iterable[object]) -> None:
    """Keep on the user, for the request, the roles named by the rows `with_group_names` read."""
    by_label = {role.label: role for role in Role}
    names = {vars(row)["group_name"] for row in rows}
    _remember_roles(user, {by_label[name] for name in names if name in by_label})


def _remember_roles(user: User, roles: set[Role]) -> frozenset[Role]:
    if user.is_superuser:
        roles.add(Role.ADMIN)
    frozen = frozenset(roles)
    setattr(user, "_echostudio_roles", frozen)  # noqa: B010  (a per-request cache, not a model field)
    return frozen


def _forget_cached_roles(user: User) -> None:
    if hasattr(user, "_echostudio_roles"):
        del user._echostudio_roles


def has_role(user: User | AnonymousUser, *roles: Role) -> bool:
    """Return True when the user holds any of the roles."""
    return bool(user_roles(user) & set(roles))


def users_with_role(role: Role) -> QuerySet[User]:
    """Return the active users holding the role, by user name (every "who may be picked" list)."""
    return User.objects.filter(is_active=True, groups__name=role.label).distinct().order_by("username")


def home_url_for(user: User | AnonymousUser) -> str | None:
    """Return the URL of the user's main work queue, or None when they hold no role."""
    held = user_roles(user)
    for role, url_name in ROLE_HOME_URL_NAMES.items():
        if role in held:
            return reverse(url_name)
    return None


def queues_for(user: User | AnonymousUser) -> list[tuple[str, str]]:
    """Return (label, url) of every work queue the user may open, for the navigation bar."""
    held = user_roles(user)
    return [(role.label, reverse(name)) for role, name in ROLE_HOME_URL_NAMES.items() if role in held]


ViewFunc = TypeVar("ViewFunc", bound=Callable[..., HttpResponse])


def role_required(*roles: Role) -> Callable[[ViewFunc], ViewFunc]:
    """Allow the view to users holding any of the roles: anonymous users log in, others get 403."""

    def decorate(view: ViewFunc) -> ViewFunc:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect(f"{reverse('login')}?next={request.get_full_path()}")
            if not has_role(request.user, *roles):
                raise PermissionDenied("Your role does not give access to this page.")
            return view(request, *args, **kwargs)

        return cast(ViewFunc, wrapper)

    return decorate


class HasRole(BasePermission):
    """DRF permission: the view lists `required_roles`; the user must hold one of them."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        required: Iterable[Role] = getattr(view, "required_roles", ())
        return bool(request.user and request.user.is_authenticated and has_role(request.user, *required))


class RoleAdminAccess:
    """Django admin mixin: holders of `admin_roles` may view, add, change and delete the model,
    except a work product (`webapp.models.Archivable`), which no one, a superuser included, adds,
    changes or deletes here: its fields belong to its workflow. It is archived (with a reason)
    and restored instead (`webapp.archive_admin`); an archivable row that is not work itself (an
    item's script) keeps its edit page, and PROTECT keeps it from deletion while work hangs under it.

    Studio admins are staff through their role, not through per-model Django permissions, so the
    admin asks the same role rule as the pages. A ModelAdmin narrows further by overriding a
    method and calling super(); each app's `access.py` names the roles it passes.
    """

    admin_roles: ClassVar[tuple[Role, ...]] = (Role.ADMIN,)
    model: Any

    def may_manage(self, request: HttpRequest) -> bool:
        """Return True when the requesting user holds one of `admin_roles`."""
        return has_role(request.user, *self.admin_roles)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.may_manage(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_manage(request)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self.may_manage(request) and not is_work_product(self.model)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_manage(request) and not is_work_product(self.model)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_manage(request) and not is_work_product(self.model)

    def has_archive_permission(self, request: HttpRequest) -> bool:
        return self.may_manage(request) and is_archivable(self.model)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions: dict[str, Any] = super().get_actions(request)  # type: ignore[misc]
        if is_archivable(self.model) and self.has_archive_permission(request):
            for action in (archive_selected, restore_selected):
                actions[action.__name__] = (action, action.__name__, action.short_description)  # type: ignore[attr-defined]
        return actions

    def get_list_filter(self, request: HttpRequest) -> Any:
        filters = list(super().get_list_filter(request))  # type: ignore[misc]
        return [*filters, ArchivedFilter] if is_archivable(self.model) else filters


def role_context(request: HttpRequest) -> dict[str, Any]:
    """Template context: the user's roles and work queues for the navigation bar."""
    return {"user_roles": user_roles(request.user), "work_queues": queues_for(request.user), "Role": Role}
