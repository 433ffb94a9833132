"""Who may see another annotator's labels, and who may change an annotation (annotation.labelling.access)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404
from django.urls import reverse

from annotation.labelling.access import (
    annotations_visible_to,
    may_see_others_labels,
    own_annotation,
    own_annotations,
)
from tests.factories import AnnotationFactory
from webapp.models import User

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "sees_others"),
    [("lead", True), ("admin", True), ("annotator", False), ("reviewer", False), ("actor", False)],
)
def test_only_leads_and_admins_see_other_annotators_labels(
    users: dict[str, User], name: str, sees_others: bool
) -> None:
    mine = AnnotationFactory.create(annotator=users[name])
    theirs = AnnotationFactory.create()

    assert may_see_others_labels(users[name]) is sees_others
    visible = set(annotations_visible_to(users[name]))
    assert visible == ({mine, theirs} if sees_others else {mine})


def test_nobody_anonymous_sees_labels() -> None:
    AnnotationFactory.create()

    assert not may_see_others_labels(AnonymousUser())
    assert not annotations_visible_to(AnonymousUser()).exists()


def test_an_annotator_works_only_on_their_own_annotations(users: dict[str, User]) -> None:
    mine = AnnotationFactory.create(annotator=users["annotator"])
    theirs = AnnotationFactory.create()

    assert own_annotation(users["annotator"], mine.pk) == mine
    assert list(own_annotations(users["annotator"])) == [mine]
    with pytest.raises(Http404):
        own_annotation(users["annotator"], theirs.pk)


def test_even_a_lead_changes_only_their_own_annotation(users: dict[str, User]) -> None:
    # Seeing others' labels on the adjudication page does not make them a lead's to edit.
    theirs = AnnotationFactory.create()

    with pytest.raises(Http404):
        own_annotation(users["lead"], theirs.pk)


def test_the_django_admin_shows_annotations_to_studio_admins_only(client_for) -> None:
    AnnotationFactory.create()
    url = reverse("admin:annotation_annotation_changelist")

    assert client_for("admin").get(url).status_code == 200
    assert client_for("annotator").get(url).status_code == 302  # not staff: sent to the admin login
