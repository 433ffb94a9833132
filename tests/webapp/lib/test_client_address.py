"""Which address a request came from behind proxies (webapp.lib.client_address)."""

from __future__ import annotations

import pytest

from webapp.lib.client_address import client_address, trusted_networks

NGINX = trusted_networks(["127.0.0.1", "::1"])
LAB = trusted_networks(["127.0.0.1", "10.0.0.0/8"])


@pytest.mark.parametrize(
    ("remote", "forwarded", "trusted", "client"),
    [
        ("203.0.113.9", "", NGINX, "203.0.113.9"),  # no proxy
        ("203.0.113.9", "198.51.100.1", NGINX, "203.0.113.9"),  # the header from a client: ignored
        ("127.0.0.1", "203.0.113.9", NGINX, "203.0.113.9"),  # nginx appended the client
        ("::1", "2001:db8::7", NGINX, "2001:db8::7"),
        ("127.0.0.1", "198.51.100.1, 203.0.113.9", NGINX, "203.0.113.9"),  # a forged hop on the left
        ("127.0.0.1", "203.0.113.9, 10.1.2.3", LAB, "203.0.113.9"),  # two proxies, both trusted
        ("127.0.0.1", "10.1.2.3", LAB, "10.1.2.3"),  # every hop trusted: the leftmost
        ("127.0.0.1", "", NGINX, "127.0.0.1"),  # a request nginx forwarded without the header
        ("127.0.0.1", "not-an-address, 203.0.113.9", NGINX, "203.0.113.9"),
        ("127.0.0.1", "10.1.2.3, not-an-address", LAB, "127.0.0.1"),  # garbage next to the proxy
        ("127.0.0.1", "203.0.113.9", (), "127.0.0.1"),  # no proxy configured: REMOTE_ADDR
    ],
)
def test_the_client_is_the_nearest_hop_no_trusted_proxy_wrote(
    remote: str, forwarded: str, trusted: tuple, client: str
) -> None:
    assert client_address(remote, forwarded, trusted) == client


def test_a_proxy_entry_that_is_no_address_is_refused_in_words() -> None:
    with pytest.raises(ValueError, match="'nginx' is not an IP address or network"):
        trusted_networks(["127.0.0.1", "nginx"])
