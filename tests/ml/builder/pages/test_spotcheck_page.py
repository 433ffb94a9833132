"""The spot-check page: what an annotator sees (a dialogue's earlier turns, signed audio, the
machine's labels) and how the form's decisions and refusals come back."""

from __future__ import annotations

from django.urls import reverse

from ml.builder.models import BuildSample, SpotCheck
from ml.builder.pages.queue import draw_spot_checks
from tests.ml.builder.pages.spotcheck_builds import finished_build, taken


def open_check_of(sample: BuildSample, user) -> SpotCheck:
    check = SpotCheck.objects.create(build=sample.build, sample=sample)
    assert taken(user, sample.build) == check
    return check


def test_a_dialogue_turn_shows_the_turns_before_it_and_not_after(db, client_for, users) -> None:
    build = finished_build(single=0, dialogues=1)
    third = BuildSample.objects.get(build=build, turn=3)
    BuildSample.objects.filter(build=build, turn=1).update(
        text="First thing I said.", response="First reply."
    )
    BuildSample.objects.filter(build=build, turn=2).update(text="Second thing I said.")
    check = open_check_of(third, users["annotator"])

    html = client_for("annotator").get(reverse("ml:builder:spot_check", args=[check.pk])).content.decode()

    assert "First thing I said." in html and "First reply." in html and "Second thing I said." in html
    assert "Turn</dt><dd>3 of 3" in html


def test_a_fix_posted_with_a_word_outside_the_vocabulary_is_shown_and_not_stored(
    db, client_for, users
) -> None:
    build = finished_build(single=1)
    check = open_check_of(BuildSample.objects.get(build=build), users["annotator"])
    url = reverse("ml:builder:spot_check", args=[check.pk])

    response = client_for("annotator").post(
        url, {"verdict": "fix", "reasons": ["perception_wrong"], "perception_pitch": "very high"}
    )

    assert response.status_code == 200
    assert "Pitch: &#x27;very high&#x27; is not one of" in response.content.decode()
    check.refresh_from_db()
    assert not check.is_submitted


def test_a_fix_posted_from_the_form_keeps_every_label_it_did_not_touch(db, client_for, users) -> None:
    build = finished_build(single=2)
    sample = BuildSample.objects.filter(build=build).order_by("id")[0]
    check = open_check_of(sample, users["annotator"])
    client = client_for("annotator")
    form = client.get(reverse("ml:builder:spot_check", args=[check.pk])).context["form"]
    data = {name: value for name, value in form.initial.items() if value not in (None, "")}
    data.update({"verdict": "fix", "reasons": ["strategy_wrong"], "recommended_strategies": ["reassurance"]})

    response = client.post(reverse("ml:builder:spot_check", args=[check.pk]), data)

    assert response.status_code == 302  # on to the next check of the build
    check.refresh_from_db()
    assert (check.verdict, check.stage) == ("fix", "response_filter")
    assert check.tom["recommended_strategies"] == ["reassurance"]
    assert check.perception == {**sample.perception}
    assert check.response == ""  # the response was not changed


def test_a_decision_can_be_changed_from_the_decided_list(db, client_for, users) -> None:
    build = finished_build(single=1)
    check = open_check_of(BuildSample.objects.get(build=build), users["annotator"])
    client = client_for("annotator")
    url = reverse("ml:builder:spot_check", args=[check.pk])
    client.post(url, {"verdict": "drop", "reasons": ["query_unsafe"]})
    assert BuildSample.objects.get(pk=check.sample_id).status == "dropped"
    queue = client.get(reverse("ml:builder:spot_checks")).content.decode()
    assert f'href="{url}"' in queue

    client.post(url, {"verdict": "keep"})

    check.refresh_from_db()
    assert (check.verdict, check.reasons, check.stage) == ("keep", [], "")
    assert BuildSample.objects.get(pk=check.sample_id).status == "active"


def test_a_strange_build_number_means_any_build(db, client_for) -> None:
    draw_spot_checks(finished_build(single=1), count=1)
    response = client_for("annotator").post(reverse("ml:builder:spot_check_next"), {"build": "x1"})
    assert response.status_code == 302
    assert response.url == reverse("ml:builder:spot_check", args=[SpotCheck.objects.get().pk])


def test_a_decided_check_opens_with_its_decision(db, client_for, users) -> None:
    build = finished_build(single=1)
    check = open_check_of(BuildSample.objects.get(build=build), users["annotator"])
    client = client_for("annotator")
    url = reverse("ml:builder:spot_check", args=[check.pk])
    form = client.get(url).context["form"]
    data = {name: value for name, value in form.initial.items() if value not in (None, "")}
    data.update(
        {"verdict": "fix", "reasons": ["perception_wrong"], "perception_intensity": "high", "note": "louder"}
    )
    client.post(url, data)

    reopened = client.get(url).context["form"]

    assert reopened.initial["verdict"] == "fix"
    assert reopened.initial["reasons"] == ["perception_wrong"]
    assert reopened.initial["note"] == "louder"
    assert reopened.initial["perception_intensity"] == "high"
    assert reopened.initial["stage"] == ""  # the reason names the stage; no explicit choice was made


def test_a_refused_fix_says_why_once_and_keeps_the_fix_fields_open(db, client_for, users) -> None:
    build = finished_build(single=1)
    check = open_check_of(BuildSample.objects.get(build=build), users["annotator"])
    url = reverse("ml:builder:spot_check", args=[check.pk])

    html = client_for("annotator").post(url, {"verdict": "fix"}).content.decode()

    assert html.count("give at least one reason") == 1
    assert '<details data-testid="fix-fields" open>' in html
