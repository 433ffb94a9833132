"""The documentation in the site: README.md at /docs/ and each docs/*.md page, open to everyone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import resolve

from webapp.docs import doc_pages
from webapp.models import User

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["/docs/", *(f"/docs/{path.stem}/" for path in sorted((ROOT / "docs").glob("*.md")))]


def _title(source: str) -> str:
    return next(line[2:] for line in (ROOT / source).read_text().splitlines() if line.startswith("# "))


@pytest.mark.parametrize("url", PAGES)
def test_each_page_renders_with_its_title_for_a_visitor_not_logged_in(client: Client, url: str) -> None:
    source = "README.md" if url == "/docs/" else f"docs/{url.split('/')[2]}.md"
    response = client.get(url)
    assert response.status_code == 200
    title = _title(source).replace("`", "")
    html = response.content.decode()
    assert f"<title>{title} · EchoStudio</title>" in html
    assert re.search(r'<h1 id="[\w-]+">', html)


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole"])
def test_every_role_reads_the_docs(client: Client, users: dict[str, User], role: str) -> None:
    client.force_login(users[role])
    assert client.get("/docs/").status_code == 200
    assert client.get("/docs/user-guide/").status_code == 200


def test_an_unknown_page_is_not_found(client: Client) -> None:
    for url in ("/docs/no-such-page/", "/docs/README/", "/docs/..%2Fsettings/"):
        assert client.get(url).status_code == 404, url


def test_writes_are_refused(client: Client) -> None:
    assert client.post("/docs/").status_code == 405


def test_links_between_pages_point_at_the_site_and_code_files_are_plain_text(client: Client) -> None:
    html = client.get("/docs/").content.decode()
    hrefs = set(re.findall(r'href="([^"]+)"', html))
    # The README's links to docs/*.md go to their pages in the site, which are served.
    assert {"/docs/user-guide/", "/docs/architecture/"} <= hrefs
    assert not [href for href in hrefs if href.endswith(".md")]
    for href in sorted(href for href in hrefs if href.startswith("/docs/")):
        assert resolve(href.split("#")[0]).url_name in {"docs_index", "docs_page"}
        assert client.get(href).status_code == 200, href


def test_the_contents_list_every_page_and_the_top_bar_links_the_docs(client: Client) -> None:
    html = client.get("/docs/training/").content.decode()
    for page in doc_pages():
        assert f'href="{page.url}"' in html
    assert 'aria-current="page">EchoChat training and inference</a>' in html
    assert 'data-testid="docs-link"' in client.get("/accounts/login/").content.decode()
