"""The outbound policy's rules without Django: which URLs are refused, where the connection goes,
and which key may travel where (webapp.lib.outbound)."""

from __future__ import annotations

import httpx
import pytest

from tests.support.fake_chat_server import json_reply, running_chat_server
from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient
from webapp.lib.outbound import (
    OutboundPolicy,
    OutboundRefused,
    bound_key_problem,
    check_outbound_url,
    key_for_url,
    parse_key_hosts,
)
from webapp.lib.pinned_http import PinnedTransport, RefusedByPolicy

STRICT = OutboundPolicy()


def public_resolver(host: str, port: int) -> list[str]:
    return ["93.184.216.34"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9911/v1",
        "http://127.0.0.1:6379/",  # Redis, as the pentest aimed it
        "http://[::1]:8130/",  # the app itself
        "http://localhost:8000/v1",
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://10.0.0.5/v1",
        "http://192.168.1.2/v1",
        "http://100.64.0.1/v1",  # carrier-grade NAT
        "http://0.0.0.0:8000/",
        "http://[::ffff:127.0.0.1]/",  # IPv4 loopback written as IPv6
        "http://2130706433/",  # 127.0.0.1 as one number
        "http://[fe80::1]/",
        "http://224.0.0.1/",
    ],
)
def test_internal_addresses_are_refused(url: str) -> None:
    with pytest.raises(OutboundRefused, match="internal address"):
        check_outbound_url(url, STRICT)


def test_a_name_that_resolves_inside_is_refused() -> None:
    with pytest.raises(OutboundRefused, match=r"judge\.example is an internal address \(10\.1\.2\.3\)"):
        check_outbound_url("https://judge.example/v1", STRICT, resolve=lambda host, port: ["10.1.2.3"])


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://files.example/a.wav", "only http"),
        ("file:///etc/passwd", "only http"),
        ("http://user:pw@judge.example/v1", "user name or password"),
        ("http:///v1", "names no host"),
    ],
)
def test_other_urls_are_refused(url: str, reason: str) -> None:
    with pytest.raises(OutboundRefused, match=reason):
        check_outbound_url(url, STRICT, resolve=public_resolver)


def test_public_hosts_pass_and_each_address_is_kept() -> None:
    checked = check_outbound_url("https://api.judge.example/v1", STRICT, resolve=public_resolver)
    assert (checked.host, checked.port, checked.addresses) == ("api.judge.example", 443, ("93.184.216.34",))


def test_the_operator_may_allow_internal_hosts_all_or_by_name() -> None:
    assert check_outbound_url("http://127.0.0.1:9911/v1", OutboundPolicy(allow_internal=True))
    named = OutboundPolicy(allowed_hosts=frozenset({"gpu-box"}))
    assert check_outbound_url("http://gpu-box:8000/v1", named, resolve=lambda host, port: ["10.0.0.7"])
    with pytest.raises(OutboundRefused):
        check_outbound_url("http://other-box:8000/v1", named, resolve=lambda host, port: ["10.0.0.8"])


def test_an_unresolvable_name_passes_a_save_but_never_a_call() -> None:
    def nowhere(host: str, port: int) -> list[str]:
        raise OSError("no such host")

    assert check_outbound_url("https://gpu.lab.internal/v1", STRICT, resolve=nowhere, unresolvable_ok=True)
    with pytest.raises(OutboundRefused, match="cannot be resolved"):
        check_outbound_url("https://gpu.lab.internal/v1", STRICT, resolve=nowhere)


def test_the_connection_goes_to_the_checked_address_with_the_name_kept() -> None:
    # "judge.test" resolves nowhere but in this resolver: had httpx resolved the name again, the
    # request could not have been sent at all.
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    policy = OutboundPolicy(allowed_hosts=frozenset({"judge.test"}))
    with running_chat_server([json_reply({"ok": True})]) as server:
        port = server.base_url.split(":")[2].split("/")[0]
        with httpx.Client(transport=PinnedTransport(policy, resolve=resolver)) as http:
            response = http.post(f"http://judge.test:{port}/v1/chat/completions", json={})
    assert response.status_code == 200
    assert asked == ["judge.test"]  # resolved once, by the check
    assert server.requests[0].headers["Host"] == f"judge.test:{port}"


def test_a_name_rebinding_to_an_internal_address_is_refused_before_connecting() -> None:
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])  # public when saved, loopback when called
    resolver = lambda host, port: next(answers)  # noqa: E731
    assert check_outbound_url("http://rebind.test/v1", STRICT, resolve=resolver)
    with (
        running_chat_server([json_reply({"ok": True})]) as server,
        httpx.Client(transport=PinnedTransport(STRICT, resolve=resolver)) as http,
        pytest.raises(RefusedByPolicy, match="internal address"),
    ):
        http.post("http://rebind.test/v1/chat/completions", json={})
    assert server.requests == []


def test_the_judge_client_gives_up_at_once_on_a_refused_host() -> None:
    with running_chat_server([json_reply({"ok": True})]) as server:
        config = ChatJudgeConfig(base_url=server.base_url, model="m", api_key="sk-x", outbound=STRICT)
        with JudgeClient(config, sleep=lambda seconds: pytest.fail("a refusal is not retried")) as client:
            reply = client.complete_json([{"role": "user", "content": "hi"}])
    assert not reply.ok and reply.attempts == 1 and "internal address" in (reply.error or "")
    assert server.requests == []


def test_a_settings_key_goes_only_to_its_own_base_url() -> None:
    home = "https://api.judge.example/v1"
    assert key_for_url("https://api.judge.example/v1/", "sk-deploy", home) == "sk-deploy"
    assert key_for_url("https://api.judge.example:443/other", "sk-deploy", home) == "sk-deploy"
    assert key_for_url("http://api.judge.example/v1", "sk-deploy", home) == ""  # not over plain http
    assert key_for_url("https://attacker.example/v1", "sk-deploy", home) == ""
    assert key_for_url("http://127.0.0.1:9911/v1", "sk-deploy", "") == ""


def test_a_named_key_goes_only_to_the_host_it_is_bound_to() -> None:
    bindings = parse_key_hosts(
        "ECHOSTUDIO_JUDGE_KEY_OPENAI=api.openai.com, ECHOSTUDIO_JUDGE_KEY_LAB=gpu-box:8000"
    )
    assert bound_key_problem("https://api.openai.com/v1", "ECHOSTUDIO_JUDGE_KEY_OPENAI", bindings) is None
    assert bound_key_problem("http://gpu-box:8000/v1", "ECHOSTUDIO_JUDGE_KEY_LAB", bindings) is None
    assert "goes only to gpu-box:8000" in str(
        bound_key_problem("http://gpu-box:9000/v1", "ECHOSTUDIO_JUDGE_KEY_LAB", bindings)
    )
    assert "goes only to api.openai.com" in str(
        bound_key_problem("https://attacker.example/v1", "ECHOSTUDIO_JUDGE_KEY_OPENAI", bindings)
    )
    assert "bound to no host" in str(
        bound_key_problem("https://x.example", "ECHOSTUDIO_JUDGE_KEY_X", bindings)
    )
    with pytest.raises(ValueError, match="VARIABLE=host"):
        parse_key_hosts("ECHOSTUDIO_JUDGE_KEY_OPENAI")
