"""Where the server may send what it was configured to send: one policy for every URL an admin or
a build names (judge, draft LLM, builder LLMs, TTS, classifier endpoints, output audio).

Three rules, each in one function:

- `check_outbound_url`: only http(s) to public addresses. A host that is, or resolves to, a
  loopback, private, link-local (cloud metadata at 169.254.169.254), shared, reserved or
  multicast address is refused (an IPv6 form carrying an IPv4 address, by the address it
  carries), unless the operator's `OutboundPolicy` allows internal hosts (all of them, or named
  ones, each on every port or one). A pentest aimed the judge key at Redis and at the app itself.
- `webapp.lib.pinned_http.PinnedTransport`: the connection goes to the address that was checked
  (kept apart so that loading the policy, as every model and the web process do, loads no HTTP
  client: httpx and what it brings are 17 MiB of the web worker's memory).
- `key_for_url` / `bound_key_problem`: a key goes only to the host it was configured for. A key
  from the settings follows its own base URL setting; a key in an ECHOSTUDIO_JUDGE_KEY_* variable
  is bound to a host by the operator (`parse_key_hosts`), never by the row that names it, and
  only variables made for keys may be named (`key_variable_problem`).

Pure: no Django. `webapp.outbound` reads the settings into a policy for the apps.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

Resolver = Callable[[str, int], list[str]]
DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundRefused(ValueError):
    """A URL the policy does not let the server call (or a key it may not carry there)."""


@dataclass(frozen=True)
class OutboundPolicy:
    """What the operator allows beyond public hosts."""

    allow_internal: bool = False  # every internal address (a lab on one private network)
    # `allowed_hosts()` entries: a name or IP literal (every port), or "host:port" / "[v6]:port"
    # (that port only), lower case.
    allowed_hosts: frozenset[str] = frozenset()

    def permits_internal(self, host: str, port: int | None = None) -> bool:
        """Return True when `host` (on `port`) may be called even though it is internal."""
        if self.allow_internal:
            return True
        name = _host_key(host)
        if name in self.allowed_hosts:
            return True
        return port is not None and f"{_with_brackets(name)}:{port}" in self.allowed_hosts


@dataclass(frozen=True)
class CheckedUrl:
    url: str
    scheme: str
    host: str  # as written, lower case, without brackets
    port: int
    addresses: tuple[str, ...]  # every address the host resolved to, all checked


def resolve_addresses(host: str, port: int) -> list[str]:
    """Return every address `host` resolves to (raises OSError or UnicodeError when it does not)."""
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def split_url(url: str) -> tuple[str, str, int]:
    """Return (scheme, host, port) of an http(s) URL; raise OutboundRefused for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise OutboundRefused(f"{url!r} is not a URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise OutboundRefused(f"{url!r}: only http:// and https:// URLs are called")
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused(f"{parts.hostname}: a URL may not carry a user name or password")
    host = (parts.hostname or "").lower()
    if not host:
        raise OutboundRefused(f"{url!r} names no host")
    return scheme, host, port or DEFAULT_PORTS[scheme]


# Where an IPv6 address carries an IPv4 one that a gateway or tunnel delivers to (NAT64, 6to4,
# IPv4-mapped, -translated and -compatible forms, Teredo), the IPv4 address decides: a pentest
# reached 127.0.0.1 as ::7f00:1 and 64:ff9b::7f00:1 while both counted as public.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Return the IPv4 addresses an IPv6 address carries (none for a plain IPv6 address)."""
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in _TRANSLATED or ip in _COMPATIBLE or any(ip in network for network in _NAT64):
        return [low32]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)  # the relay server and the client it reaches
    return []


def internal_address(address: str) -> bool:
    """Return True for any address that is not globally routable (loopback, private, metadata...),
    an IPv6 form that carries an IPv4 address judged by the address it carries."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and (carried := embedded_ipv4(ip)):
        return any(_not_global(inner) for inner in carried)
    return _not_global(ip)


def _not_global(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return not ip.is_global or ip.is_multicast


def ip_literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def check_outbound_url(
    url: str,
    policy: OutboundPolicy,
    *,
    resolve: Resolver = resolve_addresses,
    unresolvable_ok: bool = False,
) -> CheckedUrl:
    """Return the URL with its checked addresses; raise OutboundRefused when the policy forbids it.

    `unresolvable_ok` is for saving a configuration: a name only the workers' network resolves is
    accepted then (and checked again on every call, where an unresolvable host is refused).
    """
    scheme, host, port = split_url(url)
    literal = ip_literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            if unresolvable_ok:
                return CheckedUrl(url, scheme, host, port, ())
            raise OutboundRefused(f"the host {host!r} cannot be resolved") from exc
        if not addresses:
            raise OutboundRefused(f"the host {host!r} resolves to no address")
    if not policy.permits_internal(host, port):
        for address in addresses:
            if internal_address(address):
                raise OutboundRefused(
                    f"{host} is an internal address ({address}); only public hosts are called "
                    "(ECHOSTUDIO_OUTBOUND_ALLOWED_HOSTS or ECHOSTUDIO_OUTBOUND_ALLOW_INTERNAL_HOSTS lift this)"
                )
    return CheckedUrl(url, scheme, host, port, tuple(addresses))


def same_origin(url: str, other: str) -> bool:
    """Return True when both URLs name the same scheme, host and port."""
    try:
        return split_url(url) == split_url(other)
    except OutboundRefused:
        return False


def key_for_url(url: str, key: str, configured_base_url: str) -> str:
    """Return the settings' `key` when `url` is the base URL it was configured with, else "".

    A row that names another URL and no key variable gets no key: it is sent nowhere but home.
    """
    return key if key and configured_base_url and same_origin(url, configured_base_url) else ""


def parse_key_hosts(text: str) -> dict[str, str]:
    """Return {variable: host} from "ECHOSTUDIO_JUDGE_KEY_A=api.example.com, ..._B=10.0.0.5:8000"."""
    bindings: dict[str, str] = {}
    for entry in text.replace(";", ",").split(","):
        if not entry.strip():
            continue
        name, sep, host = entry.partition("=")
        if not sep or not name.strip() or not host.strip():
            raise ValueError(f"{entry.strip()!r}: write VARIABLE=host or VARIABLE=host:port")
        bindings[name.strip()] = host.strip().lower()
    return bindings


def _binding_matches(url: str, bound: str) -> bool:
    _, host, port = split_url(url)
    if "://" in bound:
        return same_origin(url, bound)
    bound_parts = urlsplit(f"//{bound}")
    if (bound_parts.hostname or "") != host:
        return False
    return bound_parts.port is None or bound_parts.port == port


def bound_key_problem(url: str, variable: str, bindings: Mapping[str, str]) -> str | None:
    """Say why the key in `variable` may not be sent to `url` (None: it may)."""
    bound = bindings.get(variable)
    if bound is None:
        return (
            f"The key in {variable} is bound to no host: the operator names its host in "
            f"ECHOSTUDIO_OUTBOUND_KEY_HOSTS ({variable}=api.example.com)."
        )
    try:
        if _binding_matches(url, bound):
            return None
    except OutboundRefused as refused:
        return str(refused)
    return f"The key in {variable} goes only to {bound}, not to {urlsplit(url).hostname}."


def allowed_hosts(names: Iterable[str]) -> frozenset[str]:
    """Return entries for `OutboundPolicy.allowed_hosts` from the operator's list: "gpu-box",
    "10.0.0.5", "fd00::5" or "[fd00::5]" allow every port of the host; "gpu-box:8000" and
    "[fd00::5]:8000" that port only. Raise ValueError on a port that is not a number."""
    entries = set()
    for raw in names:
        name = raw.strip().lower()
        if not name:
            continue
        host, port = _split_host_port(name)
        entries.add(_host_key(host) if port is None else f"{_with_brackets(_host_key(host))}:{port}")
    return frozenset(entries)


def _split_host_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":") if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise ValueError(f"{entry!r}: write [address] or [address]:port")
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    else:  # a name, an IPv4 address, or a bare IPv6 address (every port)
        host, port = entry, ""
    if not port:
        return host, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{entry!r}: {port!r} is not a port")
    return host, int(port)


def _host_key(host: str) -> str:
    """Return `host` as the policy compares it: lower case, no brackets, an IP in its short form."""
    bare = host.strip().lower().strip("[]")
    return ip_literal(bare) or bare


def _with_brackets(host: str) -> str:
    return f"[{host}]" if ":" in host else host


# A judge configuration stored in the database may name where its API key lives, but only among
# variables made for that: naming DJANGO_SECRET_KEY or a cloud credential would send it to
# whatever base URL the same row names.
JUDGE_KEY_ENV_PREFIX = "ECHOSTUDIO_JUDGE_KEY_"
_KEY_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*")


class KeyVariableRefused(ValueError):
    """An API key was asked for from an environment variable outside the allow-listed prefix."""


def key_variable_problem(name: str, prefix: str = JUDGE_KEY_ENV_PREFIX) -> str | None:
    """Return why `name` may not hold an API key, or None when it may."""
    if name.startswith(prefix) and len(name) > len(prefix) and _KEY_VARIABLE.fullmatch(name):
        return None
    return (
        f"Only environment variables named {prefix}SOMETHING (capitals, digits, _) may hold an API key, "
        f"e.g. {prefix}OPENAI; {name!r} is not one. Leave it blank to use the key from the settings."
    )


def api_key_from_environment(name: str, prefix: str = JUDGE_KEY_ENV_PREFIX) -> str:
    """Return the API key in the named variable; refuse any variable outside the prefix."""
    problem = key_variable_problem(name, prefix)
    if problem is not None:
        raise KeyVariableRefused(problem)
    return os.environ.get(name, "")
