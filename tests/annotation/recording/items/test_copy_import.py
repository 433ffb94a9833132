"""On PostgreSQL a file of new, valid items is COPYed straight into the items table; any other
file takes the staging path. Both write the same items, and a file the COPY gives up on part way
(a bad row, an id repeated or already there) ends exactly as if the staging path had read it."""

from __future__ import annotations

import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.recording.item_import.writing import STAGING
from annotation.recording.items import import_items
from annotation.recording.models import Item
from tests.conftest import only_on_postgresql
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db
SCENARIOS = ("implicit", "audio-dominant", "high-arousal", "modality-conflict", "emotion-shift")
COLUMNS = (
    "external_id",
    "text",
    "scenario",
    "target_emotion",
    "emotion_variant",
    "target_intensity",
    "instructions",
    "split",
    "state",
    "actor",
    "dialogue",
    "turn",
    "expected_strategy",
    "reference_reply",
)


def csv_file(rows: int, bad_row: int | None = None, start: int = 0, id_of=lambda n: f"CP-{n:06d}") -> bytes:
    """Return a CSV of `rows` items, with tabs, backslashes, line breaks and quotes in the scripts;
    spreadsheet row `bad_row` (the header is row 1) has a scenario no item has."""
    lines = [
        b"external_id,text,scenario,target_emotion,emotion_variant,target_intensity,instructions,split\n"
    ]
    for number in range(2, rows + 2):
        n = start + number
        scenario = "sarcastic" if number == bad_row else SCENARIOS[n % 5]
        text = f'"Line {n}:\tC:\\\\path\\n ""quoted""\nnext, café"' if n % 7 == 0 else f"Line {n}."
        lines.append(f"{id_of(n)},{text},{scenario},Joy,variant {n % 3},HIGH,Say it.,train\n".encode())
    return b"".join(lines)


class Unseekable(io.RawIOBase):
    """A file that can be read once only, as a pipe is: the import cannot try COPY and go back."""

    def __init__(self, data: bytes) -> None:
        self.data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        return self.data.readinto(buffer)


def staged(report_of) -> bool:
    """Run the import and return whether it went through the staging table."""
    with CaptureQueriesContext(connection) as queries:
        report_of()
    return any(f"CREATE TEMP TABLE {STAGING}" in query["sql"] for query in queries.captured_queries)


def items() -> list[tuple[object, ...]]:
    return list(Item.objects.order_by("pk").values_list(*COLUMNS))


@pytest.fixture
def postgres_only() -> None:
    only_on_postgresql("COPY is PostgreSQL's")


def test_the_copy_and_the_staging_path_write_the_same_items(postgres_only: None) -> None:
    data = csv_file(12_000)
    reports = []
    assert not staged(lambda: reports.append(import_items(data, "items.csv")))
    copied = items()
    Item.objects.all().delete()

    assert staged(lambda: reports.append(import_items(io.BufferedReader(Unseekable(data)), "items.csv")))

    assert items() == copied and len(copied) == 12_000
    assert Item.objects.get(external_id="CP-000007").text == 'Line 7:\tC:\\\\path\\n "quoted"\nnext, café'
    assert [(r.created, r.rows_read, r.imported) for r in reports] == [(12_000, 12_000, True)] * 2


def test_a_bad_row_in_the_middle_of_a_big_file_writes_nothing_and_is_named(db: None) -> None:
    report = import_items(csv_file(30_000, bad_row=15_001), "items.csv")

    assert [str(error) for error in report.errors] == [
        "Row 15001, scenario: 'sarcastic' is not one of implicit, audio-dominant, high-arousal, "
        "modality-conflict, emotion-shift."
    ]
    assert (report.imported, report.rows_read, report.invalid_rows) == (False, 30_000, 1)
    assert not Item.objects.exists()


def test_an_id_repeated_in_another_case_is_found_after_the_copy(db: None) -> None:
    data = csv_file(10, id_of=lambda n: f"Cp-{n}") + b"cp-5,Again.,implicit,sad,,,,\n"

    report = import_items(data, "items.csv")

    assert [str(error) for error in report.errors] == ["Row 12, external_id: cp-5 already appears on row 5."]
    assert not Item.objects.exists()


def test_an_id_repeated_far_into_the_file_is_reported_as_a_repeat(db: None) -> None:
    data = csv_file(9_000) + b"CP-000010,Again.,implicit,sad,,,,\n"

    report = import_items(data, "items.csv")

    assert [str(error) for error in report.errors] == [
        "Row 9002, external_id: CP-000010 already appears on row 10."
    ]
    assert not Item.objects.exists()


def test_a_file_of_new_items_then_one_the_studio_has_updates_it(db: None) -> None:
    ItemFactory.create(external_id="CP-009001", text="Old.", scenario="implicit", target_emotion="sad")

    report = import_items(csv_file(9_000), "items.csv")  # its last row is CP-009001

    assert (report.imported, report.created, report.updated, report.unchanged) == (True, 8_999, 1, 0)
    assert Item.objects.get(external_id="CP-009001").text == "Line 9001."
    assert Item.objects.count() == 9_000


def test_valid_rows_of_a_file_with_a_bad_one_are_imported_when_asked(db: None) -> None:
    report = import_items(csv_file(6_000, bad_row=5_500), "items.csv", import_valid_rows=True)

    assert (report.imported, report.created, report.invalid_rows) == (True, 5_999, 1)
    assert not Item.objects.filter(external_id="CP-005500").exists()
