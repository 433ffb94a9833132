"""The admin's import page: upload a file, see what was imported or each row's problem."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.recording.models import Item

CSV = b"external_id,text,scenario,target_emotion\nEE-1,Hello.,implicit,sad\nEE-2,Hi.,implicit,grumpy\n"


def test_a_bad_row_is_shown_and_nothing_is_imported(client_for) -> None:
    response = client_for("admin").post(
        reverse("annotation:import_items"), {"file": SimpleUploadedFile("items.csv", CSV)}
    )

    page = response.content.decode()
    assert "Nothing was imported" in page
    assert "row 3" in page and "target_emotion" in page and "&#x27;grumpy&#x27; is not one of" in page
    assert Item.objects.count() == 0


def test_ticking_import_valid_rows_imports_the_rest(client_for) -> None:
    response = client_for("admin").post(
        reverse("annotation:import_items"),
        {"file": SimpleUploadedFile("items.csv", CSV), "import_valid_rows": "on"},
    )

    assert 'data-testid="created">1<' in response.content.decode()
    assert list(Item.objects.values_list("external_id", flat=True)) == ["EE-1"]
