"""Each person chooses how single-key shortcuts answer; every page carries the choice."""

from __future__ import annotations

from django.urls import reverse

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
