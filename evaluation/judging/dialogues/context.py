"""The conversation before each judged dialogue turn, read from the database in a few queries.

The judge runs build their prompts from it, and the results drill-down shows the same history,
so an admin reads exactly the context the judge read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from annotation.gold.models import GoldReference
from annotation.recording.models import Item
from evaluation.judging.dialogues.history import DialogueHistory, EarlierTurn, choose_reply
from evaluation.outputs.models import ModelOutput


def histories_for(outputs: Iterable[ModelOutput]) -> dict[int, DialogueHistory]:
    """Return {output id: the conversation before its turn} for the outputs that answer a dialogue
    turn (single items are left out). Outputs must come with their item (`select_related("item")`).

    Earlier replies are the same system's outputs for the same benchmark version, else the turn's
    reference reply.
    """
    turns = [output for output in outputs if output.item.dialogue_id is not None and output.item.turn]
    if not turns:
        return {}
    earlier_items: dict[int, list[Item]] = defaultdict(list)
    for item in (
        Item.objects.filter(dialogue_id__in={output.item.dialogue_id for output in turns})
        .only("pk", "dialogue_id", "turn", "text", "reference_reply")
        .order_by("dialogue_id", "turn")
    ):
        earlier_items[item.dialogue_id or 0].append(item)
    item_ids = [item.pk for items in earlier_items.values() for item in items]
    golds = GoldReference.objects.current_by_item(item_ids)
    own_replies = {
        (system_id, version, item_id): text
        for system_id, version, item_id, text in ModelOutput.objects.filter(
            item_id__in=item_ids,
            system_id__in={output.system_id for output in turns},
            benchmark_version__in={output.benchmark_version for output in turns},
        )
        .order_by()
        .values_list("system_id", "benchmark_version", "item_id", "response_text")
    }
    histories = {}
    for output in turns:
        current = output.item.turn or 0
        earlier = []
        for item in earlier_items[output.item.dialogue_id or 0]:
            if (item.turn or 0) >= current:
                break
            gold = golds.get(item.pk)
            reply, source = choose_reply(
                own_replies.get((output.system_id, output.benchmark_version, item.pk)), item.reference_reply
            )
            earlier.append(
                EarlierTurn(
                    turn=item.turn or 0,
                    user_text=item.text,
                    perception=gold.perception if gold is not None else None,
                    reply=reply,
                    reply_source=source,
                )
            )
        histories[output.pk] = DialogueHistory(turn=current, earlier=tuple(earlier))
    return histories
