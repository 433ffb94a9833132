"""The conversation before each judged dialogue turn, read from the database in a few queries.

The judge runs build their prompts from it, and the results drill-down shows the same history,
so an admin reads exactly the context the judge read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from annotation.dialogues.history import EarlierReply, earlier_replies
from annotation.gold.models import GoldReference
from evaluation.judging.dialogues.history import DialogueHistory, EarlierTurn, ReplySource
from evaluation.outputs.models import ModelOutput

_ORIGIN_LABELS: dict[str | None, ReplySource] = {"own": "own", "planned": "reference", None: "none"}


def _stored_replies(stored: Mapping[str, Any]) -> dict[int, tuple[str, ReplySource]]:
    """Return {turn: (reply, source)} of a stored history (`ModelOutput.history`)."""
    source: ReplySource = "own" if stored.get("source") == "own" else "gold"
    return {int(entry["turn"]): (str(entry["reply"]), source) for entry in stored.get("replies") or ()}


def histories_for(outputs: Iterable[ModelOutput]) -> dict[int, DialogueHistory]:
    """Return {output id: the conversation before its turn} for the outputs that answer a dialogue
    turn (single items are left out). Outputs must come with their item (`select_related("item")`).

    An output that stores the history it was produced with is judged with exactly those replies.
    Otherwise earlier replies follow the "own" rule of `webapp.lib.replies`: the same
    system's outputs for the same benchmark version, else the turn's reference reply.
    """
    turns = [output for output in outputs if output.item.dialogue_id is not None and output.item.turn]
    if not turns:
        return {}
    groups: dict[tuple[int, str], list[ModelOutput]] = defaultdict(list)
    for output in turns:
        groups[(output.system_id, output.benchmark_version)].append(output)
    earlier: dict[int, tuple[EarlierReply, ...]] = {}
    for (system_id, version), group in groups.items():
        rebuilt = [output for output in group if output.history is None]
        own = (
            dict(
                ModelOutput.objects.filter(
                    system_id=system_id,
                    benchmark_version=version,
                    item__dialogue_id__in={output.item.dialogue_id for output in rebuilt},
                )
                .order_by()
                .values_list("item_id", "response_text")
            )
            if rebuilt
            else {}
        )
        by_item = earlier_replies([output.item for output in group], "own", own)
        for output in group:
            earlier[output.pk] = by_item[output.item.pk]
    golds = GoldReference.objects.current_by_item(
        {turn.item_id for replies in earlier.values() for turn in replies}
    )
    histories = {}
    for output in turns:
        stored = _stored_replies(output.history) if output.history is not None else None
        lines = []
        for turn in earlier[output.pk]:
            gold = golds.get(turn.item_id)
            if stored is not None:
                reply, source = stored.get(turn.turn, ("", "none"))
            else:
                reply, source = turn.reply, _ORIGIN_LABELS[turn.origin]
            lines.append(
                EarlierTurn(
                    turn=turn.turn,
                    user_text=turn.text,
                    perception=gold.perception if gold is not None else None,
                    reply=reply,
                    reply_source=source,
                )
            )
        histories[output.pk] = DialogueHistory(turn=output.item.turn or 0, earlier=tuple(lines))
    return histories
