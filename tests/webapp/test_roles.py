"""The role helpers every app shares: who holds a role, and the Django admin's role rule."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import RequestFactory

from webapp.models import User
from webapp.roles import Role, RoleAdminAccess, users_with_role

pytestmark = pytest.mark.django_db


def test_users_with_role_are_the_active_holders_by_name(make_user: Callable[..., User]) -> None:
    zoe = make_user(Role.EVALUATOR, "zoe")
    amy = make_user(Role.EVALUATOR, "amy")
    make_user(Role.EVALUATOR, "gone", is_active=False)
    make_user(Role.REVIEWER, "bob")

    assert list(users_with_role(Role.EVALUATOR)) == [amy, zoe]


def test_a_lead_annotator_is_listed_once_among_annotators(make_user: Callable[..., User]) -> None:
    lead = make_user(Role.LEAD_ANNOTATOR, "lead")  # holds the annotator and the lead groups

    assert list(users_with_role(Role.ANNOTATOR)) == [lead]
    assert list(users_with_role(Role.LEAD_ANNOTATOR)) == [lead]


class _EvaluatorsManage(RoleAdminAccess, admin.ModelAdmin):
    admin_roles = (Role.EVALUATOR, Role.LEAD_ANNOTATOR)


@pytest.mark.parametrize(
    ("role", "allowed"),
    [(Role.EVALUATOR, True), (Role.LEAD_ANNOTATOR, True), (Role.ADMIN, False), (None, False)],
)
def test_the_admin_mixin_allows_exactly_its_roles(
    make_user: Callable[..., User], role: Role | None, allowed: bool
) -> None:
    request = RequestFactory().get("/")
    request.user = make_user(role, is_staff=True)
    model_admin = _EvaluatorsManage(User, admin.site)

    assert model_admin.has_module_permission(request) is allowed
    assert model_admin.has_view_permission(request) is allowed
    assert model_admin.has_add_permission(request) is allowed
    assert model_admin.has_change_permission(request) is allowed
    assert model_admin.has_delete_permission(request) is allowed


def test_the_admin_mixin_defaults_to_the_admin_role(make_user: Callable[..., User]) -> None:
    request = RequestFactory().get("/")
    request.user = make_user(Role.ADMIN)

    assert RoleAdminAccess.admin_roles == (Role.ADMIN,)
    assert RoleAdminAccess().may_manage(request)


def test_roles_carry_no_django_permissions_that_no_view_checks(make_user: Callable[..., User]) -> None:
    # Every check is a role check (webapp.roles); a permission in a group would promise an access
    # that no view honours, so the groups carry none and the old ones are gone from the database.
    lead = make_user(Role.LEAD_ANNOTATOR, "lead")
    admin_user = make_user(Role.ADMIN, "boss")

    assert lead.get_all_permissions() == set()
    assert admin_user.get_all_permissions() == set()
    assert not Permission.objects.filter(content_type__app_label="webapp", codename="annotate_items").exists()
