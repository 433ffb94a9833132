"""A scripted EchoDialogue LLM for the fake chat server: it answers every builder prompt by its system text.

``builder_responder()`` returns a handler for ``running_chat_server``. Answers are deterministic
functions of the prompt (so a re-sent prompt gets the same answer) and report token usage. Some
answers fail on purpose, chosen by a hash of the prompt, so builds have drops to count: about 8%
of queries score 2 on non-triviality, 2% are flagged as self-harm intent, 5% of replies score 2
on grounding. ``calls_by_stage(server)`` counts the requests per builder stage and
``repeated_prompts(server)`` lists any prompt sent more than once.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable

from ml.builder.logic import prompts
from ml.builder.stages import QUERY_CRITERIA, RESPONSE_CRITERIA
from tests.support.fake_chat_server import FakeChatServer, RecordedRequest, Reply, status_reply

STAGE_OF_SYSTEM = {
    prompts.TRAJECTORY_SYSTEM: "trajectories",
    prompts.QUERY_SYSTEM: "queries",
    prompts.QUERY_FILTER_SYSTEM: "query_filter",
    prompts.RESPONSE_SYSTEM: "responses",
    prompts.RESPONSE_FILTER_SYSTEM: "response_filter",
}
STYLE_OF = {"sad": "comforting", "fear": "comforting", "angry": "calm", "disgust": "calm", "happy": "excited"}


# Every dialogue turn's query says it, so the filters can spare dialogues (`spare_dialogue_turns`).
DIALOGUE_MARK = "since we last spoke"


def _fraction(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _facts(request: RecordedRequest) -> tuple[str, dict[str, object], str]:
    body = request.json if isinstance(request.json, dict) else {}
    messages = body.get("messages") or [{}, {}]
    system, user = str(messages[0].get("content", "")), str(messages[-1].get("content", ""))
    try:
        facts = json.loads(user)
    except ValueError:
        facts = {}
    return system, facts if isinstance(facts, dict) else {}, user


def _trajectory(facts: dict[str, object]) -> dict[str, object]:
    emotion, turns = str(facts.get("opening_emotion") or "sad"), int(str(facts.get("turns") or 5))
    arc = (
        ["high", "high", "medium", "medium", "low"]
        if facts.get("opening_intensity") == "high"
        else ["medium"] * 3 + ["low"] * 2
    )
    strategies = ["validation", "questioning", "reassurance", "guidance", "encouragement"]
    return {
        "turns": [
            {
                "turn": turn,
                "emotion": emotion if turn < turns else "neutral",
                "intensity": arc[(turn - 1) % len(arc)],
                "strategy": strategies[(turn - 1) % len(strategies)],
                "beat": f"turn {turn}: the user {'opens up' if turn == 1 else 'goes on'}",
            }
            for turn in range(1, turns + 1)
        ]
    }


def _query(facts: dict[str, object]) -> dict[str, object]:
    topic = str(facts.get("topic") or "my day").rsplit(" / ", 1)[-1].lower()
    emotion, intensity, turn = facts.get("emotion"), facts.get("intensity"), facts.get("turn") or 0
    lead = {
        "sad": "I keep thinking about",
        "angry": "I cannot believe what happened with",
        "happy": "Guess what, it worked out with",
    }
    opening = lead.get(str(emotion), "I need to tell you about")
    follow = f" and, {DIALOGUE_MARK}, it is still on my mind ({turn})" if turn else ""
    moments = ("today", "tonight", "this week", "since Monday", "all morning")
    when = moments[int(_fraction(str(facts.get("request"))) * len(moments)) % len(moments)]
    # Most queries name a stressed word of their own; some name none, and some a word they do not
    # hold (which the reader leaves out).
    stress = _fraction(f"stress {facts.get('request')}")
    stressed = "" if stress < 0.2 else "elsewhere" if stress < 0.3 else "honestly"
    return {
        "query": f"{opening} {topic}{follow}, and honestly it feels {intensity} {when}.",
        "emotion_variant": f"{intensity} {emotion}",
        "stressed_word": stressed,
    }


def _filter(facts: dict[str, object], user: str, *, on_purpose: bool = True) -> dict[str, object]:
    roll = _fraction(user) if on_purpose else 1.0
    scores = dict.fromkeys(QUERY_CRITERIA, 4)
    if roll < 0.02:
        return {
            "scores": scores,
            "harmful": True,
            "harm_kind": "self_harm_intent",
            "reason": "implies self-harm",
        }
    if roll < 0.10:
        scores["non_triviality"] = 2
    return {"scores": scores, "harmful": False, "harm_kind": "", "reason": "scored by the test LLM"}


def _response(facts: dict[str, object]) -> dict[str, object]:
    description = str(facts.get("acoustic_description") or "")
    emotion = (
        description.split("Emotion: ", 1)[-1].split(" ", 1)[0].strip(";.(")
        if "Emotion: " in description
        else "sad"
    )
    strategy = str(facts.get("planned_strategy") or "validation")
    return {
        "perception": f"The user sounds {emotion}. {description[:200]}",
        "context": "The user is describing a situation that weighs on them.",
        "latent_need": "To feel heard and less alone with it.",
        "core_demand": "Acknowledge the feeling before anything else.",
        "constraints": ["premature advice", "minimising the feeling"],
        "recommended_strategies": [strategy, "emotional validation"],
        "not_recommended_strategies": ["information"],
        "speech_style": STYLE_OF.get(emotion, "calm"),
        "response": f"That sounds really hard, and it makes sense you feel {emotion}. I am here with you. What would help most right now?",
    }


def _response_filter(user: str, *, on_purpose: bool = True) -> dict[str, object]:
    scores = dict.fromkeys(RESPONSE_CRITERIA, 5)
    if on_purpose and _fraction("grounding:" + user) < 0.05:
        scores["grounded_in_perception"] = 2
    return {"scores": scores, "reason": "checked by the test LLM"}


def builder_responder(
    delay_s: float = 0.0, *, spare_dialogue_turns: bool = False
) -> Callable[[RecordedRequest], Reply]:
    """Return a handler answering every builder prompt; `delay_s` slows each answer (to kill mid-stage).

    The filters fail about one sample in seven on purpose. A five-turn dialogue is dropped whole when
    any turn fails, so about 7 in 10 dialogues go; which ones depends on the prompts (sample ids
    among them), so a test that needs dialogues to survive spares their turns from the filters.
    """

    def answer(request: RecordedRequest) -> Reply:
        system, facts, user = _facts(request)
        stage = STAGE_OF_SYSTEM.get(system)
        if stage is None:
            return status_reply(400, message="not a builder prompt")
        spared = spare_dialogue_turns and DIALOGUE_MARK in user
        data = {
            "trajectories": lambda: _trajectory(facts),
            "queries": lambda: _query(facts),
            "query_filter": lambda: _filter(facts, user, on_purpose=not spared),
            "responses": lambda: _response(facts),
            "response_filter": lambda: _response_filter(user, on_purpose=not spared),
        }[stage]()
        content = json.dumps(data)
        body = {
            "id": "chatcmpl-builder",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str((request.json or {}).get("model", "")) if isinstance(request.json, dict) else "",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": len(user.split()) + len(system.split()),
                "completion_tokens": len(content.split()),
            },
        }
        return Reply(200, json.dumps(body).encode(), {"Content-Type": "application/json"}, delay_s=delay_s)

    return answer


def calls_by_stage(server: FakeChatServer) -> Counter[str]:
    """Return how many chat requests the server received per builder stage."""
    counts: Counter[str] = Counter()
    for request in server.chat_requests:
        system, _, _ = _facts(request)
        counts[STAGE_OF_SYSTEM.get(system, "other")] += 1
    return counts


def repeated_prompts(server: FakeChatServer) -> list[str]:
    """Return the prompts (model + messages) the server received more than once."""
    seen = Counter(
        json.dumps({"model": r.json.get("model"), "messages": r.json.get("messages")}, sort_keys=True)
        for r in server.chat_requests
        if isinstance(r.json, dict)
    )
    return [prompt for prompt, count in seen.items() if count > 1]
