"""Every URL pattern of the site, for sweeps that visit each route (blindness, XSS)."""

from __future__ import annotations

from collections.abc import Iterator

from django.urls import URLPattern, URLResolver


def site_patterns(
    resolver: URLResolver, prefix: str = "", namespace: str = ""
) -> Iterator[tuple[str, URLPattern, str]]:
    """Yield (route, pattern, "namespace:") for every view below `resolver`, Django admin left out
    (sweeps walk the admin model by model)."""
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            if "django-admin" in str(entry.pattern):
                continue
            space = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from site_patterns(entry, prefix + str(entry.pattern), space)
        else:
            yield prefix + str(entry.pattern), entry, namespace
