"""Fixtures of the annotation tests: media on disk per test; an item with real audio, annotators, annotations."""

# No `from __future__ import annotations` here: the `annotations` fixture would shadow it.

from pathlib import Path

import pytest
from django.test import Client

from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, assign
from webapp.models import User
from webapp.roles import Role


@pytest.fixture(autouse=True)
def _media_on_disk(media_root: Path) -> None:
    """Store every annotation test's media under its own folder ('nothing left behind' is checked there)."""


@pytest.fixture
def item(db: None) -> Item:
    return LabellingItemFactory.create(external_id="EE-0001")


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
