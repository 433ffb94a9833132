"""Every Django admin changelist and change page, for anonymous visitors and every role.

Studio admins manage through their role, not as superusers: an Admin-role user who is not a
superuser opens every page; other roles, staff or not, open none. A model registered in the admin
without a builder here fails `test_every_registered_model_is_covered`, so new admin pages get
their access test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from annotation.labelling.models import AnnotationProject, MachineDraft, Strategy
from evaluation.echomind.models import Delivery, DeliverySet, Question, VocalAttribute
from ml.builder.models import (
    Build,
    BuildSample,
    SpotCheck,
    TaxonomyDomain,
    TaxonomySubcategory,
    TaxonomyTopic,
)
from ml.jobs.models import Checkpoint, DatasetSnapshot, OutputRewardScore
from tests.factories import (
    AnnotationFactory,
    GoldReferenceFactory,
    ItemFactory,
    ModelOutputFactory,
    ReviewFactory,
    TakeFactory,
    UserFactory,
)
from webapp import audit
from webapp.models import EndpointUrlChange, Job, User
from webapp.roles import Role, ensure_role_groups

pytestmark = pytest.mark.django_db

LOGIN_RECORD = {"user_agent": "test", "http_accept": "*/*", "path_info": "/accounts/login/"}


def _checkpoint() -> Checkpoint:
    return Checkpoint.objects.create(name="ckpt", kind=Checkpoint.Kind.SFT, uri="/tmp/ckpt")


def _subcategory() -> TaxonomySubcategory:
    return TaxonomySubcategory.objects.create(
        domain=TaxonomyDomain.objects.create(name="Work"), name="Career"
    )


def _build_sample() -> BuildSample:
    build = Build.objects.create(name="admin test build", single_turn_count=1)
    return BuildSample.objects.create(build=build, external_id="S-1", text="I missed the promotion.")


def _vocal_attribute() -> VocalAttribute:
    return VocalAttribute.objects.get_or_create(
        code="admin-test-sad", defaults={"label": "sad tone", "coarse": "paralinguistic", "fine": "emotion"}
    )[0]


def _delivery_set() -> DeliverySet:
    return DeliverySet.objects.create(
        case_id="id_admin", script_type="emotion", text="The bus comes at nine.", attribute=_vocal_attribute()
    )


def _question() -> Question:
    delivery = Delivery.objects.create(delivery_set=_delivery_set(), role="target", item=ItemFactory.create())
    return Question.objects.create(
        question_id="q-admin", delivery=delivery, level="understanding", question_type="emotion",
        text="How does the speaker sound?", options=["sad", "happy"], answer="A",
    )  # fmt: skip


def _spot_check() -> SpotCheck:
    sample = _build_sample()
    return SpotCheck.objects.create(build=sample.build, sample=sample)


BUILDERS: dict[str, Callable[[], Model]] = {
    "webapp.User": lambda: UserFactory.create(username="someone"),
    "auth.Group": lambda: ensure_role_groups()[Role.REVIEWER],
    "webapp.Job": lambda: Job.objects.create(kind="diagnostic_sleep"),
    "webapp.AuditEntry": lambda: audit.record(actor=None, action=audit.JOB_STARTED, obj=Job.objects.create()),
    "webapp.EndpointUrlChange": lambda: EndpointUrlChange.objects.create(
        endpoint="judge lab: base_url", new_url="https://api.example/v1"
    ),
    "axes.AccessAttempt": lambda: AccessAttempt.objects.create(
        **LOGIN_RECORD, get_data="", post_data="", failures_since_start=1, username="someone"
    ),
    "axes.AccessLog": lambda: AccessLog.objects.create(**LOGIN_RECORD, username="someone"),
    "axes.AccessFailureLog": lambda: AccessFailureLog.objects.create(**LOGIN_RECORD, username="someone"),
    "annotation.GoldReference": lambda: GoldReferenceFactory.create(),
    "annotation.Strategy": lambda: Strategy.objects.create(slug="validate", name="Validate"),
    "annotation.AnnotationProject": lambda: AnnotationProject.objects.create(name="Pilot"),
    "annotation.Annotation": lambda: AnnotationFactory.create(),
    "annotation.MachineDraft": lambda: MachineDraft.objects.create(
        item=ItemFactory.create(), model_name="m", prompt_version="v1"
    ),
    "annotation.Item": lambda: ItemFactory.create(),
    "annotation.Take": lambda: TakeFactory.create(),
    "annotation.Review": lambda: ReviewFactory.create(),
    "evaluation.VocalAttribute": _vocal_attribute,
    "evaluation.DeliverySet": _delivery_set,
    "evaluation.Question": _question,
    "ml.Checkpoint": _checkpoint,
    "ml.DatasetSnapshot": lambda: DatasetSnapshot.objects.create(purpose="sft", content_hash="0" * 64),
    "ml.TaxonomyDomain": lambda: TaxonomyDomain.objects.create(name="Family"),
    "ml.TaxonomySubcategory": _subcategory,
    "ml.TaxonomyTopic": lambda: TaxonomyTopic.objects.create(
        subcategory=_subcategory(), name="a harsh review"
    ),
    "ml.Build": lambda: Build.objects.create(name="admin test build", single_turn_count=1),
    "ml.BuildSample": _build_sample,
    "ml.SpotCheck": _spot_check,
    "ml.OutputRewardScore": lambda: OutputRewardScore.objects.create(
        output=ModelOutputFactory.create(), checkpoint=_checkpoint(), content=3.0, alignment=0.5, audio="own"
    ),
}
REGISTERED = sorted(model._meta.label for model in admin.site._registry)

# Who visits: anonymous, each role, a user with no role, a staff member without the Admin role,
# and a superuser. Only the Admin role and superusers may use Django admin.
VISITORS: dict[str, tuple[Role | None, dict[str, bool]] | None] = {
    "anonymous": None,
    **{role.value: (role, {}) for role in Role},
    "norole": (None, {}),
    "staff_without_role": (None, {"is_staff": True}),
    "superuser": (None, {"is_staff": True, "is_superuser": True}),
}
MAY_USE_ADMIN = {Role.ADMIN.value, "superuser"}


def test_every_registered_model_is_covered() -> None:
    assert sorted(BUILDERS) == REGISTERED


def _visit(visitor: str, make_user: Callable[..., User]) -> Client:
    client = Client()
    spec = VISITORS[visitor]
    if spec is not None:
        role, flags = spec
        client.force_login(make_user(role, f"visitor-{visitor}", **flags))
    return client


@pytest.mark.parametrize("visitor", sorted(VISITORS))
@pytest.mark.parametrize("label", REGISTERED)
def test_changelist_and_change_page_access(
    label: str, visitor: str, make_user: Callable[..., User], media_root: Path
) -> None:
    obj = BUILDERS[label]()
    app_label, model_name = obj._meta.app_label, obj._meta.model_name
    urls = [
        reverse(f"admin:{app_label}_{model_name}_changelist"),
        reverse(f"admin:{app_label}_{model_name}_change", args=[obj.pk]),
    ]
    client = _visit(visitor, make_user)
    for url in urls:
        response = client.get(url)
        if visitor in MAY_USE_ADMIN:
            assert response.status_code == 200, url
        elif visitor == "staff_without_role":
            assert response.status_code == 403, url  # staff, but no role that manages anything
        else:
            assert response.status_code == 302, url
            assert response["Location"].startswith(reverse("admin:login")), url


def test_the_demo_admin_is_not_a_superuser_yet_opens_every_admin_page() -> None:
    from annotation.demo.recording import seed_users

    seed_users()
    demo_admin = User.objects.get(username="admin")
    assert demo_admin.is_staff and not demo_admin.is_superuser
    client = Client()
    client.force_login(demo_admin)
    for model in admin.site._registry:
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert client.get(url).status_code == 200, url
