"""A prompt is paid for once per build, even when two threads of a stage ask it at the same moment
(the query writer repeats itself, so samples share filter prompts)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ml.builder.config import Endpoint
from ml.builder.llm import BuildLlm
from ml.builder.models import BuildLlmCall
from tests.ml.builder.support import make_build
from tests.support.fake_chat_server import json_reply, running_chat_server
from webapp.db import ThreadOrm

PROMPT = [{"role": "user", "content": "Screen this query: I lost my job today."}]


def test_the_same_prompt_asked_at_once_is_sent_once(transactional_db) -> None:
    # given a slow endpoint (so the asks overlap) allowing four requests at a time
    with running_chat_server(lambda request: json_reply({"verdict": "keep"}, delay_s=0.3)) as server:
        build = make_build(server.base_url)
        endpoint = Endpoint(base_url=server.base_url, model="writer-a", max_concurrency=4, max_retries=1)

        # when four threads of one stage ask the same prompt together
        @ThreadOrm().closing
        def ask(_: int) -> bool:
            return llm.ask(PROMPT, "sample-1").data == {"verdict": "keep"}

        with BuildLlm(build.pk, "query_filter", (endpoint,), 0.0) as llm, ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(4)))

    # then every thread got the answer, the endpoint was asked once, and it was stored once
    assert answers == [True] * 4
    assert len(server.chat_requests) == 1
    assert BuildLlmCall.objects.filter(build=build).count() == 1
