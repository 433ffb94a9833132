"""An Admin-role user who is not a superuser manages people in Django admin, and cannot raise
anyone (themselves included) above the Admin role."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import ItemFactory
from webapp.models import User
from webapp.roles import Role, ensure_role_groups, user_roles

pytestmark = pytest.mark.django_db


@pytest.fixture
def studio_admin(make_user: Callable[..., User]) -> Client:
    admin_user = make_user(Role.ADMIN, "ada")
    assert not admin_user.is_superuser
    client = Client()
    client.force_login(admin_user)
    return client


def _change_data(user: User, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "username": user.username,
        "display_name": user.display_name,
        "first_name": "",
        "last_name": "",
        "email": "",
        "is_active": "on" if user.is_active else "",
        "is_staff": "on" if user.is_staff else "",
        "groups": [group.pk for group in user.groups.all()],
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value != ""}


def test_an_admin_creates_a_person_grants_roles_and_deactivates_them(studio_admin: Client) -> None:
    groups = ensure_role_groups()
    response = studio_admin.post(
        reverse("admin:webapp_user_add"),
        {"username": "newbie", "password1": "violet-harbour-42", "password2": "violet-harbour-42"},
    )
    assert response.status_code == 302, response.content[:2000]
    newbie = User.objects.get(username="newbie")
    assert newbie.check_password("violet-harbour-42")

    change_url = reverse("admin:webapp_user_change", args=[newbie.pk])
    granted = _change_data(newbie, groups=[groups[Role.LEAD_ANNOTATOR].pk, groups[Role.REVIEWER].pk])
    response = studio_admin.post(change_url, granted)
    assert response.status_code == 302, response.content[:3000]
    newbie = User.objects.get(pk=newbie.pk)
    # The lead role brings the annotator role with it, as grant_role does.
    assert user_roles(newbie) == {Role.LEAD_ANNOTATOR, Role.ANNOTATOR, Role.REVIEWER}

    response = studio_admin.post(change_url, _change_data(newbie, is_active=""))
    assert response.status_code == 302
    assert User.objects.get(pk=newbie.pk).is_active is False


def test_granting_the_admin_role_opens_django_admin(
    studio_admin: Client, make_user: Callable[..., User]
) -> None:
    person = make_user(Role.EVALUATOR, "eve")
    data = _change_data(person, groups=[ensure_role_groups()[Role.ADMIN].pk])
    assert studio_admin.post(reverse("admin:webapp_user_change", args=[person.pk]), data).status_code == 302
    person.refresh_from_db()
    assert person.is_staff
    client = Client()
    client.force_login(person)
    assert client.get(reverse("admin:annotation_item_changelist")).status_code == 200


def test_an_admin_cannot_make_a_superuser_or_touch_one(
    studio_admin: Client, make_user: Callable[..., User]
) -> None:
    person = make_user(Role.REVIEWER, "rev")
    url = reverse("admin:webapp_user_change", args=[person.pk])
    studio_admin.post(url, _change_data(person, is_superuser="on"))
    assert User.objects.get(pk=person.pk).is_superuser is False

    root = make_user(None, "root", is_superuser=True, is_staff=True)
    root_url = reverse("admin:webapp_user_change", args=[root.pk])
    assert studio_admin.get(root_url).status_code == 200  # readable, not editable
    assert studio_admin.post(root_url, _change_data(root, is_active="")).status_code == 403
    password_url = reverse("admin:auth_user_password_change", args=[root.pk])
    assert (
        studio_admin.post(
            password_url, {"password1": "x-taken-over-9", "password2": "x-taken-over-9"}
        ).status_code
        == 403
    )
    assert User.objects.get(pk=root.pk).is_active


def test_people_are_deactivated_not_deleted_and_role_groups_are_read_only(
    studio_admin: Client, make_user: Callable[..., User]
) -> None:
    person = make_user(Role.ANNOTATOR, "ann")
    delete = studio_admin.post(reverse("admin:webapp_user_delete", args=[person.pk]), {"post": "yes"})
    assert delete.status_code == 403
    assert User.objects.filter(pk=person.pk).exists()
    group = ensure_role_groups()[Role.ADMIN]
    assert (
        studio_admin.post(reverse("admin:auth_group_change", args=[group.pk]), {"name": "x"}).status_code
        == 403
    )


def test_an_admin_deletes_an_item(studio_admin: Client) -> None:
    item = ItemFactory.create()
    url = reverse("admin:annotation_item_delete", args=[item.pk])
    assert studio_admin.post(url, {"post": "yes"}).status_code == 302
    assert not type(item).objects.filter(pk=item.pk).exists()
