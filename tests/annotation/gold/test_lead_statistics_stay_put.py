"""A lead still labelling an item sees no figure move when a peer submits that item (issue 40).

The pentest's finding: /agreement/ counted the lead's own open items, so its alpha, drift and
per-scenario figures changed visibly the moment a peer submitted the item the lead was still
labelling, and peers' values could be inferred from the change; and a gold export made earlier
stayed downloadable after its maker was given an item in it to label. The test walks every route
of the site as that lead (ids of the item, its annotations and the export filled in), with the
agreement page once per scenario, then lets a peer submit and walks again: every answer must be
the same, byte for byte once per-response tokens are set aside.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import get_resolver, reverse
from django.utils import timezone

from annotation.gold.models import GoldReference
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.labelling.models import Annotation
from annotation.recording.models import Item, Scenario
from evaluation.judging.models import JudgeRun
from tests.annotation.labelling.support import LabellingItemFactory, assign, perception, submitted, tom
from tests.factories import JudgementFactory, ModelOutputFactory, UserFactory
from tests.support.routes import site_patterns
from webapp.models import Job, JobStatus, User
from webapp.roles import Role

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

# Per-response values no label decides: CSRF tokens, CSP nonces, signed (timestamped) media links.
VOLATILE = re.compile(r'(nonce="|csrfmiddlewaretoken" value="|"X-CSRFToken": "|/media/a/)[^"\s<]*')


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _answers(client: Client, urls: list[str]) -> dict[str, tuple[int, str]]:
    answers = {}
    for url in urls:
        response = client.get(url)
        content = (
            b"".join(response.streaming_content)  # type: ignore[attr-defined]
            if getattr(response, "streaming", False)
            else response.content
        )
        answers[url] = (response.status_code, VOLATILE.sub(r"\1", content.decode("utf-8", "replace")))
    return answers


def _finished_export(maker: User) -> Job:
    """Return a finished export job of `maker` with an archive (its content is no matter here)."""
    key = default_storage.save("exports/gold/earlier.zip", ContentFile(b"PK\x05\x06" + bytes(18)))
    return Job.objects.create(
        kind=transfer_jobs.EXPORT_KIND,
        started_by=maker,
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
        result={"rows": 1, "key": key},
    )


def _urls(values: dict[str, object]) -> list[str]:
    urls = []
    for _route, pattern, namespace in site_patterns(get_resolver()):
        names = set(pattern.pattern.converters)
        if pattern.name and not names - set(values):
            urls.append(reverse(f"{namespace}{pattern.name}", kwargs={name: values[name] for name in names}))
    agreement = reverse("annotation:agreement")
    return [
        *urls,
        *(f"{agreement}?scenario={scenario}" for scenario in Scenario.values),
        reverse("annotation:api_gold_export") + "?as=jsonl",
        reverse("annotation:adjudication_queue") + "?show=in_progress",
    ]


def test_no_statistic_or_export_changes_when_a_peer_submits_the_leads_open_item(
    users: dict[str, User],
) -> None:
    lead = users["lead"]
    peers = [UserFactory.create(role=Role.ANNOTATOR, username=f"peer-{n}") for n in range(3)]
    # given items the peers labelled and that have gold, a week ago: the figures have something to show
    for number in range(2):
        done = LabellingItemFactory.create(split="test", external_id=f"DONE-{number}")
        for annotation, emotion in zip(assign(done, *peers[:2]), ("angry", "sad"), strict=True):
            submitted(annotation, perception=perception(emotion=emotion), tom=tom())
        Annotation.objects.filter(item=done).update(submitted_at=timezone.now() - timedelta(days=7))
        GoldReference.objects.add_current_version(done, perception=perception(), tom=tom())
        Item.objects.filter(pk=done.pk).update(state=Item.State.GOLD)
    # and an item with (imported) gold, in an export the lead made before being given it to label
    item = LabellingItemFactory.create(split="test", external_id="OPEN-1")
    GoldReference.objects.add_current_version(item, perception=perception(), tom=tom())
    export = _finished_export(lead)
    client = _client(lead)
    download = reverse("annotation:download_gold_export", args=[export.pk])
    assert client.get(download).status_code == 200
    early, own, late = assign(item, peers[0], lead, peers[1])
    submitted(early, perception=perception(emotion="angry"), tom=tom())
    # and a judge run of a system's output for the item (its pages are an admin's: they must not change either)
    judgement = JudgementFactory.create(output=ModelOutputFactory.create(item=item), rationale="gold-based")
    run = JudgeRun.objects.create(
        system=judgement.output.system, benchmark_version="echoeval-v1", judge_config=judgement.judge_config
    )
    urls = _urls(
        {
            "item_id": item.pk,
            "annotation_id": own.pk,
            "job_id": export.pk,
            "page_name": "user-guide",
            "run_id": run.pk,
            "config_id": run.judge_config_id,
        }
    )
    _answers(client, urls)  # once first: opening the workbench turns the lead's assignment into a draft
    before = _answers(client, urls)

    # when a peer submits the item the lead is still labelling, with a value unlike everyone's
    submitted(late, perception=perception(emotion="happy", polarity="positive"), tom=tom())

    # then no answer changes
    after = _answers(client, urls)
    changed = [url for url in urls if before[url] != after[url]]
    assert changed == []
    # and the earlier export stays withheld while the lead labels an item it holds
    assert before[download][0] == 302  # to the gold page, which says why (the last test)
    assert sum(status == 200 for status, _ in before.values()) > 20  # the walk reached real pages
    assert "DONE-0" in before[reverse("annotation:api_gold_export") + "?as=jsonl"][1]


def test_the_agreement_figures_leave_out_the_leads_open_item_and_say_so(users: dict[str, User]) -> None:
    lead = users["lead"]
    peers = [UserFactory.create(role=Role.ANNOTATOR) for _ in range(2)]
    item = LabellingItemFactory.create()
    first, _own, second = assign(item, peers[0], lead, peers[1])
    for annotation in (first, second):
        submitted(annotation)
    page = _client(lead).get(reverse("annotation:agreement")).content.decode()
    others = _client(users["admin"]).get(reverse("annotation:agreement")).content.decode()

    assert "0 submitted annotations of 0 items" in page
    assert "1 item you are still labelling left out of every figure" in page
    assert "2 submitted annotations of 1 item" in others


def test_the_maker_downloads_the_export_again_once_they_submit(users: dict[str, User]) -> None:
    lead = users["lead"]
    item = LabellingItemFactory.create(split="test")
    GoldReference.objects.add_current_version(item, perception=perception(), tom=tom())
    export = _finished_export(lead)
    (own,) = assign(item, lead)
    client = _client(lead)
    refused = client.get(reverse("annotation:download_gold_export", args=[export.pk]), follow=True)
    assert "now labelling an item this export holds" in refused.content.decode()
    assert f'data-testid="withheld-{export.pk}"' in refused.content.decode()

    submitted(own)

    assert client.get(reverse("annotation:download_gold_export", args=[export.pk])).status_code == 200
    assert f'data-testid="download-{export.pk}"' in client.get(reverse("annotation:gold")).content.decode()
