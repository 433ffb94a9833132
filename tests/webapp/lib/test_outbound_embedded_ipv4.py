"""IPv6 forms that carry an IPv4 address are judged by the address they carry, and an allow-list
entry may name one port of its host (webapp.lib.outbound; issue 40's outbound findings)."""

from __future__ import annotations

import pytest

from webapp.lib.outbound import (
    OutboundPolicy,
    OutboundRefused,
    allowed_hosts,
    check_outbound_url,
    internal_address,
)

STRICT = OutboundPolicy()


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a00:5",  # NAT64 of 10.0.0.5
        "64:ff9b::a9fe:a9fe",  # NAT64 of the cloud metadata address
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:c0a8:102::",  # 6to4 of 192.168.1.2
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:a00:5",  # IPv4-mapped 10.0.0.5, in hexadecimal
        "::ffff:0:7f00:1",  # IPv4-translated
        "::7f00:1",  # IPv4-compatible 127.0.0.1
        "::127.0.0.1",
        "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo whose client is 127.0.0.1
    ],
)
def test_an_ipv6_form_of_an_internal_ipv4_address_is_internal(address: str) -> None:
    assert internal_address(address)
    with pytest.raises(OutboundRefused, match="internal address"):
        check_outbound_url(f"http://[{address}]:6379/", STRICT)


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::808:808",  # NAT64 of 8.8.8.8
        "2002:808:808::1",  # 6to4 of 8.8.8.8
        "::ffff:8.8.8.8",
        "2001:4860:4860::8888",  # a plain public IPv6 address
    ],
)
def test_an_ipv6_form_of_a_public_ipv4_address_stays_public(address: str) -> None:
    assert not internal_address(address)


def test_a_name_resolving_to_a_nat64_form_of_loopback_is_refused() -> None:
    with pytest.raises(OutboundRefused, match=r"64:ff9b::7f00:1"):
        check_outbound_url("https://judge.example/v1", STRICT, resolve=lambda host, port: ["64:ff9b::7f00:1"])


def _lab(*entries: str) -> OutboundPolicy:
    return OutboundPolicy(allowed_hosts=allowed_hosts(entries))


def _inside(host: str, port: int) -> list[str]:
    return ["10.0.0.7"]


def test_an_entry_with_a_port_allows_that_port_only() -> None:
    policy = _lab("gpu-box:8000")
    assert check_outbound_url("http://gpu-box:8000/v1", policy, resolve=_inside)
    for url in ("http://gpu-box:6379/", "http://gpu-box/v1", "https://gpu-box/v1"):
        with pytest.raises(OutboundRefused, match="internal address"):
            check_outbound_url(url, policy, resolve=_inside)


def test_an_entry_without_a_port_allows_every_port_of_its_host() -> None:
    policy = _lab("gpu-box", "10.0.0.5")
    assert check_outbound_url("http://gpu-box:6379/", policy, resolve=_inside)
    assert check_outbound_url("http://10.0.0.5:8000/v1", policy)


@pytest.mark.parametrize(
    ("entry", "allowed", "refused"),
    [
        ("[fd00::5]:8000", "http://[fd00::5]:8000/v1", "http://[fd00::5]:8001/v1"),
        ("[FD00:0::5]:8000", "http://[fd00::5]:8000/v1", "http://[fd00::5]/v1"),
        ("10.0.0.5:8000", "http://10.0.0.5:8000/v1", "http://10.0.0.5:6379/"),
    ],
)
def test_ip_literals_take_a_port_too(entry: str, allowed: str, refused: str) -> None:
    policy = _lab(entry)
    assert check_outbound_url(allowed, policy)
    with pytest.raises(OutboundRefused):
        check_outbound_url(refused, policy)


@pytest.mark.parametrize("entry", ["fd00::5", "[fd00::5]"])
def test_a_bare_ipv6_entry_allows_every_port(entry: str) -> None:
    assert check_outbound_url("http://[fd00::5]:6379/", _lab(entry))


@pytest.mark.parametrize("entry", ["gpu-box:http", "gpu-box:0", "gpu-box:70000", "[fd00::5]8000"])
def test_an_entry_with_a_bad_port_is_refused_in_words(entry: str) -> None:
    with pytest.raises(ValueError, match=r"port|\[address\]"):
        allowed_hosts([entry])
