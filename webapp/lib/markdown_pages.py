"""The project's Markdown pages (README.md, docs/*.md) as HTML for the site, with GitHub's anchors.

One reading of the pages serves both the /docs/ view and the dead-link test: the same parser finds
the links (never inside code) and the same slug rule names each heading's anchor, so an anchor
that works in the site works on GitHub too. Raw HTML in the Markdown is escaped, never passed on.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

# Where a relative link to a file of the repository goes: its repo path -> a site URL,
# or None to show the link's text without a link (a code file the site does not serve).
LinkRoute = Callable[[str], str | None]

_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


@dataclass(frozen=True)
class RenderedPage:
    """A page as the site shows it: its first heading as the title, and its body as HTML."""

    title: str
    html: str


@dataclass(frozen=True)
class Link:
    """A link of a page: its target as written, and the line it is on (1-based)."""

    href: str
    line: int


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def heading_anchor(text: str) -> str:
    """Return GitHub's anchor for a heading's text: lower case, punctuation out, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _inline_text(token: Token) -> str:
    return "".join(child.content for child in token.children or [] if child.type in {"text", "code_inline"})


def _headings(tokens: list[Token]) -> Iterator[tuple[Token, str, str]]:
    """Yield (heading_open token, heading text, anchor), numbering repeated anchors as GitHub does."""
    seen: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            text = _inline_text(tokens[index + 1])
            anchor = heading_anchor(text)
            repeat = seen.get(anchor, 0)
            seen[anchor] = repeat + 1
            yield token, text, f"{anchor}-{repeat}" if repeat else anchor


def anchors(markdown: str) -> set[str]:
    """Return the anchors of a page's headings."""
    return {anchor for _token, _text, anchor in _headings(_parser().parse(markdown))}


def links(markdown: str) -> list[Link]:
    """Return every link of a page (not the text of code spans or blocks), in order."""
    found = []
    for block in _parser().parse(markdown):
        for child in block.children or []:
            if child.type == "link_open":
                found.append(Link(str(child.attrGet("href")), (block.map or [0])[0] + 1))
    return found


def is_relative_file_link(href: str) -> bool:
    """Return True for a link to another file of the repository (not a URL, a site path or an anchor)."""
    return not (_SCHEME.match(href) or href.startswith(("/", "#")))


def link_target(page_path: str, href: str) -> tuple[str, str]:
    """Return (the repo path a relative link points to, its #fragment without the #)."""
    path, _, fragment = href.partition("#")
    return posixpath.normpath(posixpath.join(posixpath.dirname(page_path), path)), fragment


def render(markdown: str, page_path: str, route: LinkRoute) -> RenderedPage:
    """Return the page as HTML: headings carry their anchors as ids, relative links to other pages
    go through `route`, and a link `route` does not serve shows as its text alone."""
    parser = _parser()
    tokens = parser.parse(markdown)
    title = ""
    for token, text, anchor in _headings(tokens):
        token.attrSet("id", anchor)
        title = title or (text if token.tag == "h1" else "")
    for block in tokens:
        _route_links(block.children or [], page_path, route)
    parser.add_render_rule("link_open", _render_link_open)
    parser.add_render_rule("link_close", _render_link_close)
    return RenderedPage(title=title, html=parser.renderer.render(tokens, parser.options, {}))


def _route_links(children: list[Token], page_path: str, route: LinkRoute) -> None:
    opened: list[Token] = []
    for child in children:
        if child.type == "link_open":
            opened.append(child)
            href = str(child.attrGet("href"))
            if is_relative_file_link(href):
                target, fragment = link_target(page_path, href)
                url = route(target)
                if url is None:
                    child.meta["plain"] = True
                else:
                    child.attrSet("href", f"{url}#{fragment}" if fragment else url)
        elif child.type == "link_close" and opened:
            child.meta["plain"] = opened.pop().meta.get("plain", False)


def _render_link_open(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return "" if tokens[idx].meta.get("plain") else renderer.renderToken(tokens, idx, options, env)


def _render_link_close(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return "" if tokens[idx].meta.get("plain") else renderer.renderToken(tokens, idx, options, env)
