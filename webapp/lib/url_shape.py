"""Whether a configured endpoint address has the shape of a web address the app may call.

Checked wherever an admin saves an endpoint (build configurations, judge configurations) and again
when a build's configuration is read, so a ``javascript:`` or ``file:`` address is refused in words
when it is saved instead of failing, or worse, when a worker uses it. Only the scheme and shape
are checked here; which hosts may be reached is the outbound policy's question. Pure: no Django.
"""

from __future__ import annotations

from urllib.parse import urlsplit

WEB_SCHEMES = ("http", "https")


def web_url_problem(url: str) -> str | None:
    """Return why `url` is not an http(s) address with a host, or None when it is one."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018  (reading it raises on a port that is not a number)
    except ValueError:
        return f"{url!r} is not a web address"
    if parts.scheme.lower() not in WEB_SCHEMES:
        return f"{url!r} must start with http:// or https://"
    if not parts.hostname:
        return f"{url!r} names no host"
    if any(character.isspace() or ord(character) < 32 for character in url.strip()):
        return f"{url!r} holds spaces or control characters"
    return None
