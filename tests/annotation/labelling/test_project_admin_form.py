"""The annotation-project admin form offers active annotators and keeps the project's own."""

from __future__ import annotations

from collections.abc import Callable

from annotation.labelling.admin import AnnotationProjectForm
from annotation.labelling.models import AnnotationProject
from webapp.models import User
from webapp.roles import Role


def test_new_projects_are_offered_active_annotators_only(make_user: Callable[..., User]) -> None:
    active = make_user(Role.ANNOTATOR)
    make_user(Role.ANNOTATOR, is_active=False)
    make_user(Role.REVIEWER)

    offered = list(AnnotationProjectForm().fields["annotators"].queryset)  # type: ignore[attr-defined]

    assert offered == [active]


def test_an_inactive_annotator_already_on_a_project_stays_selectable(make_user: Callable[..., User]) -> None:
    active = make_user(Role.ANNOTATOR)
    departed = make_user(Role.ANNOTATOR, is_active=False)
    project = AnnotationProject.objects.create(name="Pilot")
    project.annotators.add(departed)

    offered = set(AnnotationProjectForm(instance=project).fields["annotators"].queryset)  # type: ignore[attr-defined]

    # Saving the form unchanged must not drop them from the project.
    assert offered == {active, departed}
