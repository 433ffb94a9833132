"""Browsers ask every site for /favicon.ico; EchoStudio answers with its icon, and pages link it."""

from __future__ import annotations

from django.test import Client


def test_the_favicon_is_served_to_anyone(db: None) -> None:
    response = Client().get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert "max-age=86400" in response["Cache-Control"]


def test_every_page_links_the_icon(db: None) -> None:
    page = Client().get("/accounts/login/").content.decode()
    assert 'rel="icon"' in page and "favicon.svg" in page
