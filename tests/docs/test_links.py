"""No dead link in README.md or docs/*.md: files exist, #anchors are headings, /paths are routes."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import Resolver404, resolve

from webapp.lib.markdown_pages import anchors, is_relative_file_link, link_target, links

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))]


def _dead_links(page: str, text: str) -> list[str]:
    dead = []
    for link in links(text):
        where = f"{page}:{link.line}: {link.href}"
        if link.href.startswith("#"):
            if link.href[1:] not in anchors(text):
                dead.append(f"{where} (no such heading)")
        elif link.href.startswith("/"):
            try:
                resolve(link.href.split("#")[0].split("?")[0])
            except Resolver404:
                dead.append(f"{where} (no such route)")
        elif is_relative_file_link(link.href):
            target, fragment = link_target(page, link.href)
            if not (ROOT / target).exists():
                dead.append(f"{where} (no such file)")
            elif fragment and (
                not target.endswith(".md") or fragment not in anchors((ROOT / target).read_text())
            ):
                dead.append(f"{where} (no such heading in {target})")
    return dead


def test_the_readme_links_every_docs_page() -> None:
    linked = {link_target("README.md", link.href)[0] for link in links((ROOT / "README.md").read_text())}
    assert set(PAGES) - {"README.md"} <= linked


@pytest.mark.parametrize("page", PAGES)
def test_no_dead_link(page: str) -> None:
    assert _dead_links(page, (ROOT / page).read_text()) == []


@pytest.mark.parametrize("page", [page for page in PAGES if page.startswith("docs/")])
def test_each_docs_page_says_who_it_is_for(page: str) -> None:
    lines = (ROOT / page).read_text().splitlines()
    assert lines[0].startswith("# ") and lines[2].startswith("For "), page


def test_a_dead_link_is_found() -> None:
    # given a page with a missing file, a missing heading (here and in another page) and an unknown route
    text = (
        "# Here\n\n[a](missing.md) [b](#nowhere) [c](/no-such-route/) [d](user-guide.md#nowhere)\n"
        "[fine](#here) [fine](/docs/) [fine](user-guide.md#listening-studies) [fine](../webapp/docs.py)\n"
    )
    # when its links are checked
    dead = _dead_links("docs/example.md", text)
    # then exactly the four dead ones are reported
    assert [line.split(": ", 1)[1] for line in dead] == [
        "missing.md (no such file)",
        "#nowhere (no such heading)",
        "/no-such-route/ (no such route)",
        "user-guide.md#nowhere (no such heading in docs/user-guide.md)",
    ]
