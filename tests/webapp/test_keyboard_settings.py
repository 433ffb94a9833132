"""Each person chooses how single-key shortcuts answer; every page carries the choice."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.annotation.labelling.support import LabellingItemFactory, assign
from webapp.models import ShortcutKeys


def test_a_person_turns_single_key_shortcuts_off_and_every_page_says_so(client_for, users) -> None:
    annotator = client_for("annotator")
    assert 'data-shortcuts="single"' in annotator.get(reverse("annotation:annotator_queue")).content.decode()
    response = annotator.post(reverse("keyboard_settings"), {"shortcut_keys": "off"})
    assert response.status_code == 302
    users["annotator"].refresh_from_db()
    assert users["annotator"].shortcut_keys == ShortcutKeys.OFF
    assert 'data-shortcuts="off"' in annotator.get(reverse("annotation:annotator_queue")).content.decode()
    # Someone else's pages keep their own choice.
    assert (
        'data-shortcuts="single"'
        in client_for("reviewer").get(reverse("annotation:review_queue")).content.decode()
    )


def test_an_unknown_choice_is_refused_and_the_page_needs_a_login(client, client_for, users) -> None:
    response = client_for("annotator").post(reverse("keyboard_settings"), {"shortcut_keys": "sometimes"})
    assert response.status_code == 200 and "sometimes" in response.content.decode()
    users["annotator"].refresh_from_db()
    assert users["annotator"].shortcut_keys == ShortcutKeys.SINGLE
    assert client.get(reverse("keyboard_settings")).status_code == 302


@pytest.mark.parametrize(
    ("choice", "hints"),
    [
        (ShortcutKeys.SINGLE, ["Shift+1–4", "1–7", "Alt+1–3 or i"]),
        # With Alt required, Alt+1-3 is the 1-3 keys (an emotion): intensity has its letter.
        (ShortcutKeys.MODIFIER, ["Alt+Shift+1–4", "Alt+1–7", "Alt+I, Alt+Shift+I"]),
        (ShortcutKeys.OFF, []),
    ],
)
def test_the_workbench_names_the_label_keys_as_the_choice_makes_them(
    client_for, users, choice, hints
) -> None:
    users["annotator"].shortcut_keys = choice
    users["annotator"].save(update_fields=["shortcut_keys"])
    (annotation,) = assign(LabellingItemFactory.create(), users["annotator"])
    page = client_for("annotator").get(reverse("annotation:workbench", args=[annotation.pk])).content.decode()
    shown = re.findall(
        r'data-field="(?:polarity|emotion|intensity)">\s*<legend>[^<]*(?:<span class="key-hint">([^<]*))?',
        page,
    )
    assert shown == (hints or ["", "", ""])
