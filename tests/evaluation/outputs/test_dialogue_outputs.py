"""Outputs of dialogue turns: rows named by dialogue and turn, hostile ones refused, pages grouped by dialogue."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.models import Dialogue
from evaluation.outputs.audio_sources import ZipAudioSource
from evaluation.outputs.importing import ImportReport, import_outputs
from evaluation.outputs.models import ModelOutput, System
from evaluation.outputs.parsing import parse_rows
from tests.evaluation.judging_support import BenchmarkItemFactory, echochat_text, jsonl, zip_of
from tests.factories import DialogueFactory, ModelOutputFactory, tiny_wav
from webapp.api.tokens import create_token
from webapp.models import User

pytestmark = pytest.mark.usefixtures("media_root")


def test_a_row_may_name_a_dialogue_turn_and_knows_its_turn() -> None:
    (row,), problems = parse_rows(jsonl({"dialogue_id": "DL-1", "turn": 2, "output": echochat_text()}))

    assert problems == []
    assert (row.item_id, row.dialogue_id, row.turn, row.label) == ("", "DL-1", 2, "DL-1 turn 2")
    assert row.structured and row.response_text.startswith("That sounds lonely")
    (single,), _ = parse_rows(jsonl({"item_id": "EE-1", "output": "hi"}))
    assert (single.item_id, single.dialogue_id, single.turn, single.label) == ("EE-1", "", 0, "EE-1")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"item_id": "EE-1", "dialogue_id": "DL-1", "turn": 1}, 'give either "item_id" or "dialogue_id"'),
        ({"dialogue_id": "DL-1"}, '"turn" must be a whole number from 1 to 99'),
        ({"turn": 1}, '"dialogue_id" must be a dialogue'),
        ({"dialogue_id": "DL-1", "turn": True}, '"turn" must be a whole number'),
        ({"dialogue_id": "DL-1", "turn": "2"}, '"turn" must be a whole number'),
        ({"dialogue_id": "DL-1", "turn": 2.5}, '"turn" must be a whole number'),
        ({"dialogue_id": "DL-1", "turn": 0}, '"turn" must be a whole number'),
        ({"dialogue_id": "DL-1", "turn": 10**30}, '"turn" must be a whole number'),
        ({"dialogue_id": ["DL-1"], "turn": 1}, '"dialogue_id" must be a dialogue'),
        ({"dialogue_id": "D" * 61, "turn": 1}, "at most 60 printable characters"),
        ({"dialogue_id": "DL\x1b[2J", "turn": 1}, "at most 60 printable characters"),
        ({"dialogue_id": "DL-1", "turn": 1, "audio": "../../etc/passwd"}, "a path that climbs out"),
        ({"dialogue_id": "DL-1", "turn": 1}, "no output"),
    ],
)
def test_hostile_dialogue_rows_are_problems_not_tracebacks(row: dict[str, object], message: str) -> None:
    rows, problems = parse_rows(jsonl({"output": "x", **row} if "no output" not in message else row))
    assert rows == []
    assert len(problems) == 1 and message in problems[0].message


@pytest.fixture
def system(db: None) -> System:
    return System.objects.create(name="Omni-X", category=System.Category.OMNI)


def _upload(system: System, rows: bytes, files: dict[str, bytes], **options: object) -> ImportReport:
    audio = ZipAudioSource(io.BytesIO(zip_of(files)))
    return import_outputs(system, "echoeval-v1", rows, audio, **options)  # type: ignore[arg-type]


def test_dialogue_rows_import_with_audio_found_by_the_turns_item_id(system: System) -> None:
    DialogueFactory.create(external_id="DL-1", turns=3)
    report = _upload(
        system,
        jsonl(
            {"dialogue_id": "DL-1", "turn": 1, "output": "first"},
            {"dialogue_id": "DL-1", "turn": 2, "output": "second", "audio": "clips/two.wav"},
            {"item_id": "DL-1.t3", "output": "third"},
        ),
        {"DL-1.t1.wav": tiny_wav(), "clips/two.wav": tiny_wav(frequency=300), "DL-1.t3.wav": tiny_wav()},
    )

    assert report.imported, report.errors
    answers = ModelOutput.objects.order_by("item__turn").values_list("item__turn", "response_text")
    assert list(answers) == [(1, "first"), (2, "second"), (3, "third")]
    assert all(ModelOutput.objects.values_list("response_audio_key", flat=True))


def test_unknown_turns_and_a_turn_named_twice_block_the_import(system: System) -> None:
    DialogueFactory.create(external_id="DL-1", turns=2)
    report = _upload(
        system,
        jsonl(
            {"dialogue_id": "DL-1", "turn": 1, "output": "a"},
            {"dialogue_id": "DL-1", "turn": 3, "output": "no such turn"},
            {"dialogue_id": "DL-9", "turn": 1, "output": "no such dialogue"},
            {"item_id": "DL-1.t1", "output": "the same turn by its id"},
        ),
        {"DL-1.t1.wav": tiny_wav()},
    )

    assert not report.imported
    assert [str(problem) for problem in report.errors] == [
        "line 2 (DL-1 turn 3): unknown dialogue turn: DL-1 has no turn 3",
        "line 3 (DL-9 turn 1): unknown dialogue turn: DL-9 has no turn 1",
        "line 4 (DL-1.t1): duplicate item: DL-1.t1 already on line 1",
    ]
    assert not ModelOutput.objects.exists()


def test_a_dialogue_scoped_import_keeps_the_single_items_outputs(system: System) -> None:
    single = BenchmarkItemFactory.create(external_id="EE-1")
    DialogueFactory.create(external_id="DL-1", turns=2)
    _upload(
        system,
        jsonl({"item_id": "EE-1", "output": "single"}, {"dialogue_id": "DL-1", "turn": 1, "output": "old"}),
        {"EE-1.wav": tiny_wav(), "DL-1.t1.wav": tiny_wav()},
    )

    report = _upload(
        system,
        jsonl({"dialogue_id": "DL-1", "turn": 2, "output": "new"}),
        {"DL-1.t2.wav": tiny_wav()},
        scope="dialogue",
    )

    assert (report.created, report.removed) == (1, 1)  # turn 1 replaced by turn 2; EE-1 untouched
    assert ModelOutput.objects.get(item=single).response_text == "single"
    assert list(
        ModelOutput.objects.in_use().order_by("item__external_id").values_list("item__external_id", flat=True)
    ) == [
        "DL-1.t2",
        "EE-1",
    ]


@pytest.fixture
def answered(db: None) -> System:
    """A system that answered turns 1 and 3 of DL-1 (not 2), turn 1 of DL-2, and one single item."""
    system = System.objects.create(name="Dialogue system", category=System.Category.OMNI)
    for external_id in ("DL-1", "DL-2"):
        DialogueFactory.create(external_id=external_id, turns=3)
    for item_id in ("DL-1.t3", "DL-2.t1", "DL-1.t1"):  # answered out of turn order
        ModelOutput.objects.create(
            system=system,
            item=Dialogue.objects.get(external_id=item_id.split(".")[0]).turns.get(external_id=item_id),
            response_text=f"answer to {item_id}",
        )
    ModelOutputFactory.create(system=system, response_text="a single-turn answer")
    return system


def test_the_api_groups_dialogue_outputs_by_dialogue_in_turn_order(
    answered: System, users: dict[str, User]
) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Token {create_token(users['admin'], 'tests').secret}")

    body = client.get(f"/api/systems/{answered.pk}/dialogues/").json()

    groups = {group["dialogue"]: group for group in body["results"]}
    assert sorted(groups) == ["DL-1", "DL-2"]
    turns = groups["DL-1"]["turns"]
    assert [(turn["turn"], turn["item"]) for turn in turns] == [
        (1, "DL-1.t1"),
        (2, "DL-1.t2"),
        (3, "DL-1.t3"),
    ]
    assert turns[1]["output"] is None
    assert (turns[2]["output"]["dialogue"], turns[2]["output"]["turn"]) == ("DL-1", 3)
    flat = client.get(f"/api/systems/{answered.pk}/outputs/").json()["results"]
    assert sorted((row["dialogue"], row["turn"]) for row in flat if row["dialogue"]) == [
        ("DL-1", 1),
        ("DL-1", 3),
        ("DL-2", 1),
    ]
    assert [row["turn"] for row in flat if row["dialogue"] is None] == [None]


@pytest.mark.parametrize("role", ["evaluator", "annotator", "lead", "norole"])
def test_only_admins_read_dialogue_outputs(answered: System, users: dict[str, User], role: str) -> None:
    api = Client(HTTP_AUTHORIZATION=f"Token {create_token(users[role], 'tests').secret}")
    assert api.get(f"/api/systems/{answered.pk}/dialogues/").status_code == 403
    page = Client()
    page.force_login(users[role])
    assert page.get(reverse("evaluation:system_dialogues", args=[answered.pk])).status_code in (302, 403)
    assert Client().get(f"/api/systems/{answered.pk}/dialogues/").status_code in (401, 403)


def test_the_dialogue_outputs_page_shows_each_dialogues_turns_in_order(
    answered: System, client_for: Callable[[str], Client]
) -> None:
    response = client_for("admin").get(reverse("evaluation:system_dialogues", args=[answered.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    assert html.index('data-dialogue="DL-1"') < html.index('data-dialogue="DL-2"')
    dl1 = html[html.index('data-dialogue="DL-1"') : html.index('data-dialogue="DL-2"')]
    assert dl1.index('data-turn="1"') < dl1.index('data-turn="2"') < dl1.index('data-turn="3"')
    assert "answer to DL-1.t1" in dl1 and "answer to DL-1.t3" in dl1
    assert "No output for this turn." in dl1
    assert "a single-turn answer" not in html  # single-turn outputs are not dialogue turns
