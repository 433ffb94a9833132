"""The demo's dialogues: three five-turn conversations, one voice each, two recorded, one to record."""

from __future__ import annotations

import io
import wave

from annotation.demo.dialogues import DEMO_DIALOGUES, RECORDED_DIALOGUES, seed_dialogues
from annotation.demo.recording import seed_users
from annotation.recording.models import Dialogue, Item, Take
from annotation.recording.takes import recordable_refusal
from webapp.models import User
from webapp.storage import read_media


def test_the_demo_holds_three_five_turn_dialogues_two_recorded(db: None, media_root) -> None:
    seed_users()

    assert seed_dialogues() == 3

    dialogues = list(Dialogue.objects.filter(external_id__startswith="DEMO-DLG").order_by("external_id"))
    assert [d.turns.count() for d in dialogues] == [5, 5, 5]
    assert len({d.voice for d in dialogues}) == 3
    for dialogue in dialogues:
        turns = list(dialogue.turns.order_by("turn"))
        assert len({turn.target_emotion for turn in turns}) >= 4  # the emotion evolves turn by turn
        assert all(turn.reference_reply and turn.expected_strategy for turn in turns)
        assert len({turn.actor_id for turn in turns}) == 1
        recorded = dialogue.external_id in RECORDED_DIALOGUES
        expected_state = Item.State.RECORDED if recorded else Item.State.RECORDING
        assert {turn.state for turn in turns} == {expected_state}
    take = Take.objects.filter(item__external_id="DEMO-DLG-1.t2").get()
    with wave.open(io.BytesIO(read_media(take.audio_key))) as reader:
        assert (reader.getframerate(), reader.getnchannels()) == (16_000, 1)
    assert take.status == Take.Status.ACCEPTED and take.contours


def test_the_third_dialogue_is_recorded_turn_by_turn_by_the_demo_actor(db: None, media_root) -> None:
    seed_users()
    seed_dialogues()
    actor = User.objects.get(username="actor")
    third = Dialogue.objects.get(external_id=DEMO_DIALOGUES[2].external_id)

    assert recordable_refusal(third.turns.get(turn=1), actor) is None
    assert "Record turn 1 of this dialogue first" in (
        recordable_refusal(third.turns.get(turn=2), actor) or ""
    )


def test_seeding_again_changes_nothing(db: None, media_root) -> None:
    seed_users()
    seed_dialogues()
    takes = set(Take.objects.values_list("pk", flat=True))

    seed_dialogues()

    assert set(Take.objects.values_list("pk", flat=True)) == takes
    assert Item.objects.filter(dialogue__isnull=False).count() == 15


def test_the_first_dialogue_is_labelled_turn_by_turn_with_gold_on_its_first_turns(
    db: None, media_root
) -> None:
    from annotation.demo.dialogue_labels import ANNOTATED_TURNS, GOLD_TURNS, seed_dialogue_labels
    from annotation.gold.models import GoldReference
    from annotation.labelling.models import Annotation

    seed_users()
    seed_dialogues()

    assert seed_dialogue_labels() == GOLD_TURNS
    assert seed_dialogue_labels() == GOLD_TURNS  # idempotent

    turns = list(Item.objects.filter(dialogue__external_id=RECORDED_DIALOGUES[0]).order_by("turn"))
    gold = [GoldReference.objects.current_of(turn) for turn in turns]
    assert [reference is not None for reference in gold] == [True] * GOLD_TURNS + [False] * (5 - GOLD_TURNS)
    assert gold[0] is not None and not gold[0].cross_turn  # a first turn has nothing to compare with
    assert gold[1] is not None and gold[1].cross_turn["emotion_change"] == "shifted"  # sad -> fear
    assert gold[1].reference_response == DEMO_DIALOGUES[0].turns[1].reply
    submitted = Annotation.objects.filter(item__in=turns, status=Annotation.Status.SUBMITTED)
    assert {annotation.item.turn for annotation in submitted} == set(range(1, ANNOTATED_TURNS + 1))
    # The second recorded dialogue is assigned and waits for the demo annotators.
    waiting = Annotation.objects.filter(item__dialogue__external_id=RECORDED_DIALOGUES[1])
    assert waiting.exists() and not waiting.filter(status=Annotation.Status.SUBMITTED).exists()
