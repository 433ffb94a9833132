"""RowShape writes a serializer's documents from `.values()` rows, and refuses a serializer whose
fields are not plain columns it could read that way (webapp.api.rows, issue 27)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone
from rest_framework import serializers

from webapp.api.rows import RowShape
from webapp.api.serializers import JobSerializer
from webapp.models import User

pytestmark = pytest.mark.django_db


class UserSerializer(serializers.ModelSerializer[User]):
    class Meta:
        model = User
        fields = ["id", "username", "is_active", "last_login", "date_joined"]


def test_documents_from_values_equal_the_serializers(make_user: Any) -> None:
    make_user(last_login=timezone.now())
    make_user(last_login=None)
    users = User.objects.order_by("pk")
    shape = RowShape(UserSerializer)

    with timezone.override("Asia/Kolkata"):  # dates in the current time zone, as DRF writes them
        assert shape.documents(shape.values(users)) == UserSerializer(users, many=True).data
        assert [shape.document_of(user) for user in users] == UserSerializer(users, many=True).data


def test_a_field_that_reads_no_column_is_refused() -> None:
    with pytest.raises(TypeError, match="is_finished is not a column"):
        RowShape(JobSerializer)
