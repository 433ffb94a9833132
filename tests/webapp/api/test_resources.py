"""Items, gold and systems through the API: cursor pages, filters, bulk import all-or-nothing, errors."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotation.recording.models import Item
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import ItemFactory
from webapp.api.tokens import create_token


@pytest.fixture
def admin_api(users) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {create_token(users['admin'], 'tests').secret}")


def test_items_come_in_cursor_pages_that_cover_every_row_once(admin_api) -> None:
    ItemFactory.create_batch(25, split="test")
    seen: list[str] = []
    url = "/api/items/?page_size=10"
    while url:
        page = admin_api.get(url).json()
        seen += [row["external_id"] for row in page["results"]]
        url = page["next"]
    assert len(seen) == 25 == len(set(seen))


def test_items_filter_by_state_scenario_and_split_and_refuse_unknown_values(admin_api) -> None:
    ItemFactory.create(external_id="A", split="train", scenario="implicit")
    ItemFactory.create(external_id="B", split="test", scenario="implicit")
    rows = admin_api.get("/api/items/?split=train&scenario=implicit&state=scripted").json()["results"]
    assert [row["external_id"] for row in rows] == ["A"]
    refused = admin_api.get("/api/items/?split=validation")
    assert refused.status_code == 400
    assert refused.json()["problems"][0].startswith("split:")


def test_bulk_create_from_json_rows(admin_api) -> None:
    rows = [
        {"external_id": "EE-1", "text": "I got the job!", "scenario": "implicit", "target_emotion": "happy"},
        {"external_id": "EE-2", "text": "Fine.", "scenario": "implicit", "target_emotion": "angry"},
    ]
    response = admin_api.post("/api/items/", rows, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["created"] == 2
    assert Item.objects.count() == 2


def test_bulk_create_writes_nothing_when_one_row_is_bad(admin_api) -> None:
    body = "external_id,text,scenario,target_emotion\nEE-1,Hello,implicit,happy\nEE-2,Hi,nowhere,happy\n"
    response = admin_api.post("/api/items/", body, content_type="text/csv")
    assert response.status_code == 400
    assert response.json()["problems"][0]["row"] == 3
    assert Item.objects.count() == 0


def test_bulk_create_from_jsonl_body(admin_api) -> None:
    body = json.dumps({"external_id": "EE-9", "text": "Hm.", "scenario": "implicit", "target_emotion": "sad"})
    response = admin_api.post("/api/items/", body, content_type="application/x-ndjson")
    assert response.status_code == 201


def test_one_item_comes_with_its_current_gold(admin_api) -> None:
    BenchmarkItemFactory.create(external_id="EE-7")
    body = admin_api.get("/api/items/EE-7/").json()
    assert body["external_id"] == "EE-7"
    assert body["gold"]["version"] >= 1 and body["gold"]["item"] == "EE-7"
    assert admin_api.get("/api/items/EE-404/").json() == {
        "detail": "No Item matches the given query.",
        "problems": [],
    }


def test_gold_exports_as_jsonl_for_a_split(admin_api, media_root) -> None:
    BenchmarkItemFactory.create(external_id="EE-1", split="train")
    BenchmarkItemFactory.create(external_id="EE-2", split="test")
    response = admin_api.get("/api/gold/export/?split=train")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [line["id"] for line in lines] == ["EE-1"]
    assert admin_api.get("/api/gold/export/?as=parquet").status_code == 400


def test_a_system_name_taken_twice_is_refused_in_the_one_error_shape(admin_api) -> None:
    assert admin_api.post("/api/systems/", {"name": "X"}, content_type="application/json").status_code == 201
    refused = admin_api.post("/api/systems/", {"name": "X"}, content_type="application/json")
    assert refused.status_code == 400
    assert refused.json() == {
        "detail": "name: system with this name already exists.",
        "problems": ["name: system with this name already exists."],
    }


def test_a_judge_run_of_an_unknown_system_is_refused(admin_api) -> None:
    refused = admin_api.post(
        "/api/judge-runs/", {"system": 999, "judge": 999}, content_type="application/json"
    )
    assert refused.status_code == 400
    assert len(refused.json()["problems"]) == 2


def test_gold_exports_a_splits_parquet_file(admin_api, media_root) -> None:
    import io

    import pyarrow.parquet as pq

    BenchmarkItemFactory.create(external_id="EE-1", split="train")
    BenchmarkItemFactory.create(external_id="EE-2", split="test")
    response = admin_api.get("/api/gold/export/?split=train&as=parquet")
    assert response.status_code == 200
    table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
    assert table.column("id").to_pylist() == ["EE-1"]
    assert admin_api.get("/api/gold/export/?split=dev&as=parquet").status_code == 404


def test_an_unknown_api_address_answers_in_the_error_shape(admin_api) -> None:
    response = admin_api.get("/api/nothing-here/")
    assert response.status_code == 404
    assert response.json() == {"detail": "No such API endpoint.", "problems": []}
    assert admin_api.get("/no-such-page/")["Content-Type"].startswith("text/html")


def test_valid_rows_import_when_asked_and_an_oversized_body_is_refused_unread(admin_api, settings) -> None:
    body = "external_id,text,scenario,target_emotion\nEE-1,Hello,implicit,happy\nEE-2,Hi,nowhere,happy\n"
    response = admin_api.post("/api/items/?import_valid_rows=1", body, content_type="text/csv")
    assert response.status_code == 201 and response.json()["created"] == 1
    assert len(response.json()["problems"]) == 1
    from annotation.recording.views import MAX_IMPORT_BYTES

    too_long = str(MAX_IMPORT_BYTES + 2**20)
    huge = admin_api.post("/api/items/", "x", content_type="text/csv", CONTENT_LENGTH=too_long)
    assert huge.status_code == 400 and "larger than" in huge.json()["detail"]


def test_the_gold_jsonl_links_each_recording_instead_of_embedding_it(admin_api, media_root) -> None:
    from tests.factories import GoldReferenceFactory

    gold = GoldReferenceFactory.create(item__split="train")
    response = admin_api.get("/api/gold/export/?split=train")
    [line] = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert line["id"] == gold.item.external_id
    assert isinstance(line["audio"], str) and line["audio"]
