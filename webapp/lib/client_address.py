"""Which address a request came from, when proxies stand in front of the app.

A proxy's own address arrives as REMOTE_ADDR and the client's in the X-Forwarded-For it appends
to. That header is believed only from a proxy the operator named (ECHOSTUDIO_TRUSTED_PROXIES), and
read from the right: each trusted proxy's hop is skipped, and the first address no trusted proxy
wrote is the client's. Anything to its left was written by the client and is never believed. Behind
the documented nginx proxy the login lockout saw every client as 127.0.0.1, so five bad passwords
from anyone locked a user name for everyone.

Pure: no Django. `webapp.security.client_ip` reads the request and the settings.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """Return the proxies' addresses or networks ("127.0.0.1", "10.0.0.0/8", "::1"); raise ValueError
    on an entry that is neither."""
    networks = []
    for entry in entries:
        if entry.strip():
            try:
                networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                raise ValueError(f"{entry.strip()!r} is not an IP address or network") from None
    return tuple(networks)


def client_address(remote_addr: str, forwarded_for: str, trusted: tuple[Network, ...]) -> str:
    """Return the client's address: REMOTE_ADDR, or, when that is a trusted proxy, the rightmost
    X-Forwarded-For hop that is not a trusted proxy (the leftmost when every hop is one)."""
    if not _is_trusted(remote_addr, trusted):
        return remote_addr
    nearest = remote_addr
    for hop in reversed([hop.strip() for hop in forwarded_for.split(",") if hop.strip()]):
        if _parse(hop) is None:
            return nearest  # no proxy writes that: the chain cannot be read past it
        if not _is_trusted(hop, trusted):
            return hop
        nearest = hop
    return nearest


def _parse(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return None


def _is_trusted(address: str, trusted: tuple[Network, ...]) -> bool:
    ip = _parse(address)
    return ip is not None and any(ip.version == network.version and ip in network for network in trusted)
