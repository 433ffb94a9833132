"""The admin's recording dashboard: items per state, takes per actor, reviewers' load, Fleiss' kappa."""

from __future__ import annotations

from django.urls import reverse

from annotation.recording.models import Item
from tests.annotation.recording.support import decide, record
from tests.factories import ItemFactory
from webapp.models import User


def test_the_dashboard_shows_states_acceptance_load_and_kappa(
    users: dict[str, User], review_panel: list[User], take_wav: bytes, client_for
) -> None:
    actor = users["actor"]
    verdict_sets = [("accept",) * 3, ("accept", "accept", "reject"), ("reject",) * 3, ("accept",) * 3]
    for n, verdicts in enumerate(verdict_sets):
        decide(record(actor, ItemFactory.create(external_id=f"EE-{n}", actor=actor), take_wav), *verdicts)
    ItemFactory.create(external_id="EE-9")

    response = client_for("admin").get(reverse("annotation:recording_dashboard"))

    page = response.content.decode()
    charts = response.context["charts"]
    assert dict(zip(charts["states"]["labels"], charts["states"]["counts"], strict=True)) == {
        "Scripted": 1,
        "Recording": 2,
        "In review": 0,
        "Recorded": 2,
        "Annotating": 0,
        "Gold": 0,
    }
    (row,) = response.context["actor_rows"]
    assert (row["total"], row["accepted"], row["rejected"], row["waiting"]) == (4, 2, 2, 0)
    assert row["rate"] == 0.5
    assert sum(r["accepts"] + r["rejects"] for r in response.context["reviewer_rows"]) == 12
    # The four takes' verdicts are the hand-computed example of test_recording_stats: kappa 5/8.
    assert "Fleiss' κ on verdicts: <strong>0.625</strong>" in page
    assert 'id="recording-charts"' in page and "chart-4.6.1.umd.min.js" in page
    assert Item.objects.filter(state=Item.State.RECORDED).count() == 2


def test_the_studio_overview_links_to_the_recording_pages(client_for) -> None:
    page = client_for("admin").get(reverse("annotation:admin_dashboard")).content.decode()
    for name in ("recording_dashboard", "import_items", "assign_items"):
        assert reverse(f"annotation:{name}") in page
