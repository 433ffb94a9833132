"""Fixtures of the labelling and gold tests: an item with real audio, its annotators, and their annotations."""

# No `from __future__ import annotations` here: the `annotations` fixture would shadow it.

import pytest
from django.test import Client

from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import assign, make_item
from webapp.models import User
from webapp.roles import Role


@pytest.fixture
def item(db: None) -> Item:
    return make_item()


@pytest.fixture
def trio(make_user) -> list[User]:
    """Three annotators besides the `users` fixture's annotator."""
    return [make_user(Role.ANNOTATOR, name) for name in ("ana", "ben", "cleo")]


@pytest.fixture
def annotations(item: Item, trio: list[User]) -> list[Annotation]:
    return assign(item, *trio)


@pytest.fixture
def client_as():
    def login(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return login
