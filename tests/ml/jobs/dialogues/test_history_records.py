"""Training records of dialogue turns: history from the earlier turns, frozen in the snapshot, exported."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from annotation.gold.models import GoldReference
from ml.core.training_records import read_records
from ml.jobs.datasets import create_snapshot, entries_hash, export_snapshot, snapshot_records
from ml.jobs.dialogues.history import EXCLUDED_EARLIER_TURN_UNRECORDED
from ml.jobs.models import DatasetSnapshot
from tests.ml.jobs.dialogues.support import gold_reply, planned_reply, recorded_dialogue
from tests.ml.jobs.support import TrainingItemFactory

pytestmark = pytest.mark.usefixtures("ml_storage")
Purpose = DatasetSnapshot.Purpose


def test_a_turns_record_carries_the_earlier_turns_audio_text_and_replies(db: None) -> None:
    # given a three-turn dialogue whose second turn has no gold, and a single item
    recorded_dialogue("DL-1", gold_turns=(1, 3))
    TrainingItemFactory.create(external_id="EE-1")

    snapshot = create_snapshot(Purpose.SFT, ["train"])
    rows = {row.record.item_id: row for row in snapshot_records(snapshot)}

    # then SFT takes the turns with gold (turn 2 has none), each with the turns before it
    assert sorted(rows) == ["DL-1.t1", "DL-1.t3", "EE-1"]
    third = rows["DL-1.t3"]
    assert (third.record.dialogue_id, third.record.turn) == ("DL-1", 3)
    assert [(turn.turn, turn.reply) for turn in third.record.history] == [
        (1, gold_reply("DL-1", 1)),  # gold's reference response where the turn has gold
        (2, planned_reply("DL-1", 2)),  # else the item's planned reply
    ]
    assert third.record.history[0].text == "I ate alone again (DL-1.t1)."
    assert third.record.response == gold_reply("DL-1", 3)  # the target is this turn's own gold
    assert len(third.history_audio) == 2 and not np.array_equal(third.history_audio[0][0], third.audio)
    first, single = rows["DL-1.t1"], rows["EE-1"]
    assert (first.record.turn, first.record.history, first.history_audio) == (1, (), ())
    assert (single.record.dialogue_id, single.record.history) == ("", ())


def test_the_snapshot_freezes_the_history_rows(db: None) -> None:
    recorded_dialogue("DL-1", turns=2)
    snapshot = create_snapshot(Purpose.SFT, ["train"])
    second = next(entry for entry in snapshot.entries if entry["external_id"] == "DL-1.t2")
    first_gold = GoldReference.objects.current_of(second["history"][0]["item"])
    assert first_gold is not None
    assert second["history"] == [
        {
            "item": second["history"][0]["item"],
            "turn": 1,
            "take": second["history"][0]["take"],
            "gold": first_gold.pk,
        }
    ]
    without_history = [{**entry, "history": []} for entry in snapshot.entries]
    assert entries_hash(without_history) != snapshot.content_hash

    # when gold moves on, the snapshot's records still hear the reply it froze; a new snapshot the new one
    GoldReference.objects.add_current_version(first_gold.item, reference_response="A later reply.")
    (_, row) = snapshot_records(snapshot)
    assert row.record.history[0].reply == gold_reply("DL-1", 1)
    (_, fresh) = snapshot_records(create_snapshot(Purpose.SFT, ["train"]))
    assert fresh.record.history[0].reply == "A later reply."


def test_a_turn_after_an_unrecorded_turn_is_left_out_and_counted(db: None) -> None:
    recorded_dialogue("DL-1", turns=3, unrecorded_turns=(2,))
    snapshot = create_snapshot(Purpose.INFERENCE, ["train"])
    assert [entry["external_id"] for entry in snapshot.entries] == ["DL-1.t1"]
    assert snapshot.excluded == {EXCLUDED_EARLIER_TURN_UNRECORDED: 1}


def test_the_export_folder_holds_each_turns_history_audio(db: None, tmp_path: Path) -> None:
    recorded_dialogue("DL-1", turns=3)
    records_file = export_snapshot(create_snapshot(Purpose.SFT, ["train"]), tmp_path / "export")

    rows = {row.record.item_id: row for row in read_records(records_file)}

    third = rows["DL-1.t3"]
    assert [turn.audio_path for turn in third.record.history] == [
        "audio/DL-1.t3.history-t1.wav",
        "audio/DL-1.t3.history-t2.wav",
    ]
    assert all((records_file.parent / turn.audio_path).is_file() for turn in third.record.history)
    # the history audio is the earlier turns' own recordings
    np.testing.assert_allclose(third.history_audio[0][0], rows["DL-1.t1"].audio, atol=1e-4)
    np.testing.assert_allclose(third.history_audio[1][0], rows["DL-1.t2"].audio, atol=1e-4)
