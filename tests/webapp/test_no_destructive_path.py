"""No page, API route, admin page or management command deletes or rewrites a work product.

Walked, not sampled: every model (which are work products, and what their relations do on delete),
every registered ModelAdmin and inline (as an Admin-role user and as a superuser), every URL
route's API view, and every management command and module of the project (no raw SQL that could
go around the models' refusal)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib import admin
from django.core.management import get_commands
from django.db import models
from django.db.models import ProtectedError
from django.test import Client, RequestFactory
from django.urls import get_resolver, reverse

from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation, AnnotationRevision
from annotation.recording.models import Item, Review, Take
from evaluation.echomind.models import Answer as EchoMindAnswer
from evaluation.echomind.models import Question, Reply, Transcript
from evaluation.judging.models import HumanJudgement, Judgement
from evaluation.outputs.models import ModelOutput
from evaluation.studies.models import StudyRating
from ml.builder.models import SpotCheck
from tests.factories import (
    AnnotationFactory,
    GoldReferenceFactory,
    JudgementFactory,
    ModelOutputFactory,
    RecordedItemFactory,
    ReviewFactory,
)
from tests.support.routes import site_patterns
from webapp.archive_admin import is_work_product
from webapp.models import Archivable, WorkProductDeleteError
from webapp.roles import Role

# The work products the issue names; the walk below also finds any added later.
NAMED_WORK_PRODUCTS = {
    Take,
    Review,
    Annotation,
    AnnotationRevision,
    GoldReference,
    StudyRating,
    Judgement,
    HumanJudgement,
    ModelOutput,
    SpotCheck,
    EchoMindAnswer,
    Transcript,
    Reply,
}
PROJECT_APPS = ("annotation", "evaluation", "ml", "webapp")
ROOT = Path(__file__).resolve().parents[2]


def work_products() -> list[type[models.Model]]:
    return [model for model in apps.get_models() if is_work_product(model)]


def test_every_named_work_product_is_archivable() -> None:
    assert set(work_products()) >= NAMED_WORK_PRODUCTS
    # Archived, deleted only when empty (PROTECT from the work under them).
    assert issubclass(Item, Archivable) and not is_work_product(Item)
    assert issubclass(Question, Archivable) and not is_work_product(Question)


def test_no_relation_of_a_work_product_cascades() -> None:
    """Deleting what a work product hangs from never deletes the work (PROTECT, from Item down)."""
    cascading = [
        f"{model.__name__}.{field.name}"
        for model in work_products()
        for field in model._meta.get_fields()
        if isinstance(field, models.ForeignKey) and field.remote_field.on_delete is models.CASCADE
    ]
    assert cascading == []


@pytest.mark.django_db
def test_work_products_refuse_deletion_one_by_one_and_in_bulk() -> None:
    for model in work_products():
        with pytest.raises(WorkProductDeleteError):
            model.objects.all().delete()  # type: ignore[attr-defined]
        with pytest.raises(WorkProductDeleteError):
            model().delete()


@pytest.mark.django_db
def test_parents_of_work_are_protected(media_root) -> None:
    item = RecordedItemFactory.create()
    take = item.recording
    ReviewFactory.create(take=take)
    AnnotationFactory.create(item=item)
    GoldReferenceFactory.create(item=item)
    output = ModelOutputFactory.create(item=item)
    JudgementFactory.create(output=output)
    for parent in (item, output.system, output.judgements.get().judge_config):
        with pytest.raises(ProtectedError):
            type(parent).objects.filter(pk=parent.pk).delete()
    assert (
        Take.objects.filter(item=item).count(),
        Review.objects.filter(take__item=item).count(),
        Annotation.objects.filter(item=item).count(),
        GoldReference.objects.filter(item=item).count(),
        Judgement.objects.filter(output__item=item).count(),
    ) == (1, 1, 1, 1, 1)


def _model_admins() -> Iterator[tuple[type[models.Model], admin.ModelAdmin]]:
    yield from admin.site._registry.items()


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["admin", "superuser"])
def test_every_model_admin_keeps_work_products(who: str, make_user) -> None:
    person = make_user(Role.ADMIN, who, is_superuser=who == "superuser", is_staff=True)
    request = RequestFactory().get("/django-admin/")
    request.user = person
    walked = set()
    for model, model_admin in _model_admins():
        inlines = [inline(model, admin.site) for inline in model_admin.inlines]
        for inline in inlines:
            if is_work_product(inline.model):
                assert not inline.has_change_permission(request), inline
                assert not inline.has_delete_permission(request), inline
                assert not inline.has_add_permission(request, None), inline
        if not is_work_product(model):
            continue
        walked.add(model)
        assert not model_admin.has_delete_permission(request), model
        assert not model_admin.has_change_permission(request), model
        assert not model_admin.has_add_permission(request), model
        actions = model_admin.get_actions(request)
        assert "delete_selected" not in actions, model
        assert {"archive_selected", "restore_selected"} <= set(actions), model
    # The work products with an admin page were walked (AnnotationRevision is an inline there).
    assert walked >= {Take, Review, Annotation, GoldReference, SpotCheck}


@pytest.mark.django_db
def test_admin_pages_refuse_to_delete_or_rewrite_work(make_user, media_root) -> None:
    superuser = make_user(Role.ADMIN, "root", is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(superuser)
    item = RecordedItemFactory.create()
    annotation = AnnotationFactory.create(item=item, status=Annotation.Status.SUBMITTED, tom={"context": "x"})
    gold = GoldReferenceFactory.create(item=item)
    take = item.recording
    assert take is not None
    rows: list[models.Model] = [take, annotation, gold, ReviewFactory.create(take=take)]
    for row in rows:
        opts = row._meta
        delete = reverse(f"admin:{opts.app_label}_{opts.model_name}_delete", args=[row.pk])
        assert client.post(delete, {"post": "yes"}).status_code == 403
        change = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
        assert client.post(change, {"status": "draft", "tom": "{}"}).status_code == 403
        changelist = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        bulk = client.post(
            changelist, {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"}
        )
        assert bulk.status_code in (200, 302)
        assert type(row)._default_manager.filter(pk=row.pk).exists()
    annotation.refresh_from_db()
    assert (annotation.status, annotation.tom) == (Annotation.Status.SUBMITTED, {"context": "x"})
    # An item with work under it is not deleted either: Django shows what protects it.
    client.post(reverse("admin:annotation_item_delete", args=[item.pk]), {"post": "yes"})
    assert Item.objects.filter(pk=item.pk).exists()
    # Its workflow-owned fields are read-only; the script stays editable.
    request = RequestFactory().get("/")
    request.user = superuser
    item_admin = admin.site._registry[Item]
    assert {"state", "recording"} <= set(item_admin.get_readonly_fields(request, item))
    assert item_admin.has_change_permission(request, item)


# An API view may write a work product only through its workflow. The one PUT: an annotator's
# autosave (`workflows.save_draft`), refused once the annotation is submitted.
API_WRITES_THROUGH_A_WORKFLOW = {("annotation.labelling.api", "AnnotationDetail", "put")}


def test_no_api_route_deletes_or_rewrites_work() -> None:
    found = set()
    for route, pattern, _namespace in site_patterns(get_resolver()):
        view_class = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
        if view_class is None:
            continue
        for method in ("delete", "put", "patch"):
            # Django's own form views answer PUT as POST; what matters is a handler the project wrote.
            defining = next((klass for klass in view_class.__mro__ if method in vars(klass)), None)
            if defining is not None and defining.__module__.split(".")[0] in PROJECT_APPS:
                found.add((defining.__module__, defining.__name__, method, route))
    unexpected = {entry for entry in found if entry[:3] not in API_WRITES_THROUGH_A_WORKFLOW}
    assert unexpected == set()


@pytest.mark.django_db
def test_the_autosave_route_refuses_a_submitted_annotation(make_user, media_root) -> None:
    annotator = make_user(Role.ANNOTATOR)
    annotation = AnnotationFactory.create(
        annotator=annotator, status=Annotation.Status.SUBMITTED, tom={"a": 1}
    )
    client = Client()
    client.force_login(annotator)
    answer = client.put(
        reverse("annotation:api_annotation", args=[annotation.pk]),
        {"perception": {}, "tom": {}, "version": annotation.version},
        content_type="application/json",
    )
    assert answer.status_code in (400, 409)
    annotation.refresh_from_db()
    assert (annotation.status, annotation.tom) == (Annotation.Status.SUBMITTED, {"a": 1})


# Raw SQL is the one way around the models' refusal: no module writes a work product's table by hand,
# except the annotation submit, whose one statement is that workflow's own compare-and-set.
RAW_SQL_WRITE = re.compile(r"\b(DELETE\s+FROM|TRUNCATE|UPDATE)\s+[\"{]?(\w+)")
RAW_SQL_ALLOWED = {("annotation/labelling/workflows.py", "table")}
# A command may rewrite a work product's field only to move its file (same audio, new key).
ORM_WRITE = re.compile(
    r"\b("
    + "|".join(sorted(model.__name__ for model in NAMED_WORK_PRODUCTS))
    + r")\.objects\b[^\n]*\.(delete|update|bulk_update)\("
)


def _project_modules() -> Iterator[Path]:
    for app in PROJECT_APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_no_module_writes_work_with_raw_sql() -> None:
    tables = {model._meta.db_table for model in work_products()} | {"table"}
    offenders, seen = [], set()
    for path in _project_modules():
        relative = path.relative_to(ROOT).as_posix()
        for match in RAW_SQL_WRITE.finditer(path.read_text()):
            seen.add((relative, match.group(2)))
            if match.group(2) in tables and (relative, match.group(2)) not in RAW_SQL_ALLOWED:
                offenders.append(f"{relative}: {match.group(0)}")
    assert offenders == []
    assert seen >= RAW_SQL_ALLOWED  # the scan finds the one it allows: it reads what it should


def test_no_management_command_deletes_or_rewrites_work() -> None:
    commands = {name: app for name, app in get_commands().items() if app in PROJECT_APPS}
    assert {"import_outputs", "import_gold", "seed_demo", "export_gold"} <= set(commands)
    offenders = []
    for name, app in commands.items():
        source = inspect.getsource(import_module(f"{app}.management.commands.{name}"))
        offenders += [f"{name}: {match.group(0)}" for match in ORM_WRITE.finditer(source)]
        offenders += [f"{name}: {match.group(0)}" for match in RAW_SQL_WRITE.finditer(source)]
    assert offenders == []
