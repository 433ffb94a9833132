"""The Content-Security-Policy webapp.security sends: scripts only from our own static files.

A script an attacker manages to put into a page (a label, an item text, an imported output)
does not run: the policy allows no inline script, no event-handler attributes, no eval. Audio
comes from this site, or from the S3 bucket's origin when media live on S3 (browsers get
presigned URLs there), plus any origin listed in ECHOSTUDIO_CSP_MEDIA_ORIGINS. Media and fetches
also allow `blob:`: a take recorded or picked in the browser is played and drawn before upload.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

HEADER = "Content-Security-Policy"


def origin_of(url: str) -> str:
    """Return scheme://host[:port] of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def s3_media_origins(bucket: str, region: str, endpoint_url: str) -> list[str]:
    """Return the origins presigned URLs of the bucket point at (none when media are local)."""
    if not bucket:
        return []
    if endpoint_url:
        return [origin_of(endpoint_url)]
    origins = [f"https://{bucket}.s3.amazonaws.com"]
    if region:
        origins.append(f"https://{bucket}.s3.{region}.amazonaws.com")
    return origins


def content_security_policy(media_origins: Iterable[str]) -> str:
    """Return the policy: scripts from 'self' only; media and fetches also from the media origins."""
    media = " ".join(["'self'", *media_origins])
    directives = {
        "default-src": "'self'",
        "script-src": "'self'",
        "script-src-attr": "'none'",
        # wavesurfer styles its shadow DOM with <style> elements; progress bars use style="width".
        "style-src": "'self' 'unsafe-inline'",
        "img-src": "'self' data: blob:",
        "media-src": f"{media} blob:",
        # The recorder's preview: wavesurfer fetches the take's local blob: URL to draw it (the
        # bytes never leave the browser; a blob: URL can only name data this page made).
        "connect-src": f"{media} blob:",
        "font-src": "'self'",
        "object-src": "'none'",
        "base-uri": "'self'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())
