"""Every response carries a Content-Security-Policy without inline script or eval."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.test import Client

from webapp.lib.csp import content_security_policy, s3_media_origins
from webapp.security import policy_from_settings

ROOT = Path(__file__).resolve().parents[3]


def directives(policy: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in policy.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


def test_scripts_come_only_from_this_site() -> None:
    policy = directives(content_security_policy([]))
    assert policy["script-src"] == ["'self'"]
    assert policy["script-src-attr"] == ["'none'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert not any("unsafe-eval" in value for values in policy.values() for value in values)
    assert "'unsafe-inline'" not in policy["default-src"] + policy["script-src"]


def test_media_on_s3_may_be_played_and_fetched() -> None:
    assert s3_media_origins("", "eu-west-1", "") == []
    assert s3_media_origins("audio", "eu-west-1", "") == [
        "https://audio.s3.amazonaws.com",
        "https://audio.s3.eu-west-1.amazonaws.com",
    ]
    origins = s3_media_origins("audio", "", "http://minio.lab:9000/")
    assert origins == ["http://minio.lab:9000"]
    policy = directives(content_security_policy(origins))
    assert "http://minio.lab:9000" in policy["media-src"]
    assert "http://minio.lab:9000" in policy["connect-src"]
    assert "http://minio.lab:9000" not in policy["script-src"]


def test_the_configured_bucket_and_extra_origins_are_allowed(settings) -> None:
    settings.S3_BUCKET = "audio"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "x", "OPTIONS": {"endpoint_url": "https://s3.lab.example:8443"}},
    }
    settings.CSP_MEDIA_ORIGINS = ["https://cdn.lab.example"]
    media = directives(policy_from_settings())["media-src"]
    assert "https://s3.lab.example:8443" in media and "https://cdn.lab.example" in media


def test_pages_anonymous_or_logged_in_carry_the_header(
    client: Client, client_for: Callable[[str], Client]
) -> None:
    for response in (client.get("/accounts/login/"), client_for("admin").get("/", follow=True)):
        assert response.status_code == 200
        assert "script-src 'self'" in response["Content-Security-Policy"]


def test_no_template_has_inline_script_or_event_handler_attributes() -> None:
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        for number, line in enumerate(text.splitlines(), 1):
            if ("<script" in line and "src=" not in line) or " hx-on" in line:
                offenders.append(f"{template.relative_to(ROOT)}:{number}")
            if any(f" on{event}=" in line for event in ("click", "change", "submit", "load", "input")):
                offenders.append(f"{template.relative_to(ROOT)}:{number}")
    assert offenders == []


def test_a_take_made_in_the_browser_may_be_played_and_drawn_before_upload() -> None:
    # The recorder's preview fetches its own blob: URL (wavesurfer) and plays it; nothing else may.
    policy = directives(content_security_policy([]))
    assert "blob:" in policy["connect-src"] and "blob:" in policy["media-src"]
    assert "blob:" not in policy["script-src"] + policy["default-src"]
