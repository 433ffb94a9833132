"""One reply rule after an earlier dialogue turn: the gold export, training and the workbench agree."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from annotation.gold.dialogue.rows import dialogue_fields
from annotation.gold.models import GoldReference
from annotation.labelling.dialogue.history import dialogue_history
from annotation.recording.models import Item
from ml.jobs.datasets import create_snapshot, snapshot_records
from ml.jobs.models import DatasetSnapshot
from tests.ml.jobs.dialogues.support import planned_reply, recorded_dialogue
from webapp.lib.replies import earlier_reply
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.usefixtures("ml_storage")


def test_a_whitespace_only_gold_response_falls_back_to_the_planned_reply_everywhere(
    db: None, make_user: Callable[..., User]
) -> None:
    # given a dialogue whose first turn's gold response is only whitespace
    recorded_dialogue("DL-1", turns=2)
    first = Item.objects.get(external_id="DL-1.t1")
    GoldReference.objects.filter(item=first, is_current=True).update(reference_response="  \n ")
    second = Item.objects.get(external_id="DL-1.t2")

    # when the gold export, training and the labelling workbench read turn 1's reply
    exported = dialogue_fields(second, {}, audio_bytes=False, audio_name=lambda name: f"{name}.wav")
    records = {
        row.record.item_id: row.record
        for row in snapshot_records(create_snapshot(DatasetSnapshot.Purpose.SFT, ["train"]))
    }
    shown = dialogue_history(second, make_user(Role.ANNOTATOR))

    # then all three give the planned reply, stripped, and say it is not gold
    planned = planned_reply("DL-1", 1)
    assert [turn["reply"] for turn in exported["history"]] == [planned]
    assert [turn.reply for turn in records["DL-1.t2"].history] == [planned]
    assert [(turn.reply, turn.reply_is_gold) for turn in shown] == [(planned, False)]


def test_each_source_falls_back_past_blank_replies_the_same_way() -> None:
    assert earlier_reply("gold", planned=" Plan. ", gold=" Gold. ") == ("Gold.", "gold")
    assert earlier_reply("gold", planned="Plan.", gold="   ") == ("Plan.", "planned")
    assert earlier_reply("gold", planned="Plan.", gold=None, own="Mine.") == ("Plan.", "planned")
    assert earlier_reply("own", planned="Plan.", gold="Gold.", own="Mine.") == ("Mine.", "own")
    assert earlier_reply("own", planned="Plan.", own="\t") == ("Plan.", "planned")
    assert earlier_reply("planned", planned="Plan.", gold="Gold.", own="Mine.") == ("Plan.", "planned")
    assert earlier_reply("planned", planned="  ") == ("", None)
    with pytest.raises(ValueError, match="reply source"):
        earlier_reply("judge", planned="Plan.")  # type: ignore[arg-type]


def test_the_actor_hears_the_planned_reply_stripped_and_a_blank_one_not_at_all() -> None:
    # The recording side asks the same rule with the planned source (annotation.recording.conversation).
    assert earlier_reply("planned", planned="  I'm here.  ") == ("I'm here.", "planned")
    assert earlier_reply("planned", planned="   ") == ("", None)
