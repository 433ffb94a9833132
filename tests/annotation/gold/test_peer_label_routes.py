"""A lead (or an admin who labels) with an open annotation of an item gets none of its peers' labels
and none of its gold from any page, API, export or admin view: the test walks every route the
site has, fills in the ids of that item, its annotations, its gold and an export of everything,
and looks for the peers' and the gold's words in every answer (inside zip and parquet files too).

The pentest's finding: /adjudicate/<id>/ refused, but /api/gold/export/ returned all three
annotators' labels and /api/items/<id>/ the gold."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.contrib import admin
from django.test import Client
from django.urls import get_resolver, reverse
from django.utils import timezone

from annotation.gold.models import GoldReference
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, assign, perception, submitted, tom
from tests.factories import UserFactory
from tests.support.routes import site_patterns
from webapp.jobs import run_job
from webapp.models import Job, User
from webapp.roles import Role, grant_role

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

PEER_WORDS = ("PEERSECRETALPHA", "PEERSECRETBETA")
GOLD_WORD = "GOLDSECRETGAMMA"
# Ids this walk leaves unfilled: objects of recording (takes, reviews), tokens, and the evaluation
# and builder sides, none of which holds an annotator's labels. (The item's gold reaches those
# sides only through judge prompts and drill-downs of items with model outputs; the drill-down is
# walked, `item_id`, and refuses.) A route taking any other id fails the walk until it is filled.
UNFILLED = {
    # EchoMind's cases, questions and import reports: scripts, answer keys and file names, never
    # an annotator's labels.
    "set_id",
    "question_id",
    "import_id",
    "token",
    "token_id",
    "public_id",
    "review_id",
    "kind",
    "turn",
    "study_id",
    "evaluator_id",
    "system_id",
    "config_id",
    "run_id",
    "build_id",
    "sample_id",
    "check_id",
    "test",  # a crowd rater's screening audio (under a crowd link's token)
    "number",
    "checkpoint_id",
    # A person's consent and lineage report (admins): which exports, snapshots, checkpoints and
    # studies used their work, never anyone's labels.
    "user_id",
    # A judge audit (admins): probe scores and agreement figures per stage, never a label's text.
    "audit_id",
}


class Scene:
    def __init__(
        self, viewer: User, item: Item, peers: list[Annotation], own: Annotation, export: Job
    ) -> None:
        self.viewer, self.item, self.peers, self.own, self.export = viewer, item, peers, own, export
        self.gold = GoldReference.objects.current_of(item)


def _labelled(item: Item, viewer: User) -> tuple[list[Annotation], Annotation]:
    peers_users = [UserFactory.create(role=Role.ANNOTATOR) for _ in PEER_WORDS]
    *peers, own = assign(item, *peers_users, viewer)
    peers = [
        submitted(annotation, perception=perception(situation=word), tom=tom(context=word))
        for annotation, word in zip(peers, PEER_WORDS, strict=True)
    ]
    return peers, own


@pytest.fixture(params=["lead", "admin who labels"])
def scene(request: pytest.FixtureRequest, users: dict[str, User]) -> Scene:
    viewer = users["lead"]
    if request.param == "admin who labels":
        viewer = UserFactory.create(role=Role.ADMIN, username="labelling-admin")
        grant_role(viewer, Role.LEAD_ANNOTATOR)
    item = LabellingItemFactory.create(split="test")
    peers, own = _labelled(item, viewer)
    # Gold exists while the viewer's own annotation is open (imported gold, or a reopened label).
    GoldReference.objects.add_current_version(
        item, perception=perception(situation=GOLD_WORD), tom=tom(context=GOLD_WORD), note=GOLD_WORD
    )
    Item.objects.filter(pk=item.pk).update(state=Item.State.GOLD)
    # An export of everything, made by someone who may see it all.
    other_admin = UserFactory.create(role=Role.ADMIN, username="other-admin")
    export = transfer_jobs.start_export(started_by=other_admin)
    run_job(export.pk)
    return Scene(viewer, item, peers, own, Job.objects.get(pk=export.pk))


def _fill(scene: Scene) -> dict[str, object]:
    peer = scene.peers[0]
    return {
        "item_id": scene.item.pk,
        "external_id": scene.item.external_id,
        "annotation_id": scene.own.pk,
        "pk": peer.pk,
        "job_id": scene.export.pk,
        "page_name": "user-guide",  # the docs pages are public (webapp/docs.py)
    }


def _urls(scene: Scene) -> tuple[list[str], list[str]]:
    values = _fill(scene)
    urls, skipped = [], []
    for _route, pattern, namespace in site_patterns(get_resolver()):
        names = set(pattern.pattern.converters)
        if not pattern.name or names - set(values):
            skipped += sorted(names - set(values))
            continue
        urls.append(reverse(f"{namespace}{pattern.name}", kwargs={name: values[name] for name in names}))
    # Peers' own annotation pages, by every id a viewer could guess.
    urls += [reverse("annotation:workbench", kwargs={"annotation_id": peer.pk}) for peer in scene.peers]
    urls += [
        reverse("annotation:api_gold_export") + "?as=jsonl",
        reverse("annotation:api_gold_export") + "?as=parquet&split=test",
        reverse("annotation:api_annotations") + f"?item={scene.item.external_id}",
    ]
    return urls, skipped


def _admin_urls(scene: Scene) -> list[str]:
    urls = []
    objects: dict[type, list[Any]] = {
        Annotation: scene.peers,
        GoldReference: [scene.gold],
        Item: [scene.item],
    }
    for model in admin.site._registry:
        if model._meta.app_label != "annotation":
            continue
        info = (model._meta.app_label, model._meta.model_name)
        urls.append(reverse("admin:{}_{}_changelist".format(*info)))
        urls += [reverse("admin:{}_{}_change".format(*info), args=[row.pk]) for row in objects.get(model, [])]
    return urls


def _texts(content: bytes) -> Iterator[str]:
    yield content.decode("utf-8", "replace")
    if content[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            for name in archive.namelist():
                yield from _texts(archive.read(name))
    if content[:4] == b"PAR1":
        yield json.dumps(pq.read_table(io.BytesIO(content)).to_pylist(), default=str)


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _body(client: Client, url: str) -> tuple[int, bytes]:
    response = client.get(url)
    if getattr(response, "streaming", False):
        return response.status_code, b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return response.status_code, response.content


def test_no_route_gives_a_lead_with_an_open_annotation_a_peer_label_or_the_gold(scene: Scene) -> None:
    client = _client(scene.viewer)
    urls, skipped = _urls(scene)
    leaks: list[str] = []
    answered = 0
    for url in [*urls, *_admin_urls(scene)]:
        status, content = _body(client, url)
        answered += status == 200
        for text in _texts(content):
            leaks += [f"{url} ({status}): {word}" for word in (*PEER_WORDS, GOLD_WORD) if word in text]
    assert sorted(set(leaks)) == [], "\n".join(sorted(set(leaks)))
    assert answered > 10  # the walk reached real pages, not only refusals
    assert set(skipped) <= UNFILLED, "a route takes an id this walk does not fill: fill it or list it"


def test_once_submitted_the_lead_reads_peers_and_gold_again(scene: Scene) -> None:
    # (Submitted before the gold came, as the workflow closes an item's annotations at gold.)
    Annotation.objects.filter(pk=scene.own.pk).update(
        status=Annotation.Status.SUBMITTED, submitted_at=timezone.now()
    )
    client = _client(scene.viewer)
    _, item_page = _body(
        client, reverse("annotation:api_item", kwargs={"external_id": scene.item.external_id})
    )
    _, export = _body(client, reverse("annotation:api_gold_export") + "?as=jsonl")
    assert GOLD_WORD in item_page.decode()
    assert all(word in export.decode() for word in (*PEER_WORDS, GOLD_WORD))


def test_the_lead_is_told_why_the_item_api_withholds_gold(scene: Scene) -> None:
    client = _client(scene.viewer)
    response = client.get(reverse("annotation:api_item", kwargs={"external_id": scene.item.external_id}))
    assert response.status_code == 403
    assert "still labelling" in response.content.decode()
