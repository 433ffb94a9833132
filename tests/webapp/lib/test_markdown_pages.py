"""Markdown pages as HTML: GitHub's anchors, links routed or shown as text, raw HTML escaped."""

from __future__ import annotations

from webapp.lib.markdown_pages import anchors, heading_anchor, link_target, links, render


def _route(path: str) -> str | None:
    return {"README.md": "/docs/", "docs/user-guide.md": "/docs/user-guide/"}.get(path)


def test_anchors_follow_github() -> None:
    assert heading_anchor("Scripting: the REST API and the `echostudio` client") == (
        "scripting-the-rest-api-and-the-echostudio-client"
    )
    assert heading_anchor("Do the training loops learn? (CPU, synthetic prosody task)") == (
        "do-the-training-loops-learn-cpu-synthetic-prosody-task"
    )
    assert heading_anchor("AAA with the bounded target objective (issue #25)") == (
        "aaa-with-the-bounded-target-objective-issue-25"
    )


def test_a_repeated_heading_gets_a_numbered_anchor() -> None:
    assert anchors("# Notes\n\n## Notes\n\n## Notes\n") == {"notes", "notes-1", "notes-2"}


def test_links_inside_code_are_not_links() -> None:
    text = "[real](a.md)\n\n`[not](b.md)`\n\n```\n[not](c.md)\n```\n"
    assert [link.href for link in links(text)] == ["a.md"]


def test_relative_links_resolve_from_the_page_folder() -> None:
    assert link_target("docs/api.md", "../README.md#quick-start") == ("README.md", "quick-start")
    assert link_target("docs/api.md", "user-guide.md") == ("docs/user-guide.md", "")


def test_render_routes_pages_keeps_urls_and_shows_code_links_as_text() -> None:
    text = (
        "# Title here\n\nSee [the guide](docs/user-guide.md#review), [the site](/docs/), "
        "[a paper](https://example.org/p) and [the code](webapp/docs.py).\n"
    )
    page = render(text, "README.md", _route)
    assert page.title == "Title here"
    assert '<h1 id="title-here">Title here</h1>' in page.html
    assert '<a href="/docs/user-guide/#review">the guide</a>' in page.html
    assert '<a href="/docs/">the site</a>' in page.html
    assert '<a href="https://example.org/p">a paper</a>' in page.html
    assert "and the code." in page.html


def test_raw_html_is_escaped() -> None:
    text = '# T\n\n<script>alert(1)</script> <img src=x onerror="alert(1)"> [x](javascript:alert(1))\n'
    page = render(text, "README.md", _route)
    assert "<script>" not in page.html and "<img" not in page.html and 'href="javascript' not in page.html
    assert "&lt;script&gt;" in page.html


def test_tables_render() -> None:
    assert "<table>" in render("| a | b |\n| --- | --- |\n| 1 | 2 |\n", "README.md", _route).html
