"""An httpx client whose every request follows an `OutboundPolicy` (webapp.lib.outbound): the host
is checked when the request is sent and the connection goes to the address that was checked. It
resolves the host once per request, checks every address, and connects to the checked IP while the
Host header, TLS SNI and certificate check keep the name: no DNS-rebinding window between check
and connect.

Only what calls out loads this module (jobs, the drafting view's client), so the web process that
serves annotators never loads httpx.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx

from webapp.lib.outbound import (
    OutboundPolicy,
    OutboundRefused,
    Resolver,
    check_outbound_url,
    ip_literal,
    resolve_addresses,
)


class RefusedByPolicy(httpx.ConnectError):
    """`PinnedTransport` refused to connect: a transport error, so every caller's "could not
    connect" handling reports it, but one no retry can mend."""


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport that checks each request's host and connects to the checked address."""

    def __init__(
        self, policy: OutboundPolicy, *, resolve: Resolver = resolve_addresses, **transport: Any
    ) -> None:
        self.policy = policy
        self._resolve = resolve
        transport.setdefault("verify", _default_tls_context())
        self._inner = httpx.HTTPTransport(**transport)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            checked = check_outbound_url(str(request.url), self.policy, resolve=self._resolve)
        except OutboundRefused as refused:
            raise RefusedByPolicy(str(refused), request=request) from refused
        # The Host header was set from the name when the request was built and stays; the TLS
        # handshake names (and verifies) the host through SNI, not the address dialled.
        request.url = request.url.copy_with(host=checked.addresses[0])
        if checked.scheme == "https" and ip_literal(checked.host) is None:
            request.extensions = {**request.extensions, "sni_hostname": checked.host}
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


@functools.cache
def _default_tls_context() -> ssl.SSLContext:
    """Return the certificate check every pinned client makes by default, made once per process:
    loading the CA bundle costs about 60 ms of CPU, which each new client paid again (a build's
    stage job per endpoint, a TTS server's client per sample). One context serves any number of
    connections and threads."""
    return httpx.create_ssl_context()


def http_client(policy: OutboundPolicy | None, **options: Any) -> httpx.Client:
    """Return an httpx client whose requests follow `policy` (None: unchecked, for trusted callers
    such as the command line, where the operator types the URL)."""
    if policy is None:
        return httpx.Client(**options)
    limits = options.pop("limits", httpx.Limits())
    return httpx.Client(transport=PinnedTransport(policy, limits=limits), **options)
