"""The project's documentation read in the site: README.md at /docs/, docs/<page>.md at /docs/<page>/.

Public like the README it renders: no login, so a newcomer reads the user guide before having an
account. Only the files below are served (a page name is looked up, never joined into a path).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from webapp.lib.markdown_pages import RenderedPage
from webapp.lib.markdown_pages import render as render_markdown

README = "README.md"
# The reading order of the docs/ pages in the site's list; a page not named here follows, A to Z.
READING_ORDER = (
    "user-guide",
    "dialogues",
    "builder",
    "training",
    "api",
    "jobs",
    "deployment",
    "architecture",
    "dependencies",
)


@dataclass(frozen=True)
class DocPage:
    """One Markdown file the site serves: its name in URLs ("" for the README) and repo path."""

    name: str
    path: str

    @property
    def url(self) -> str:
        """Return the page's address in the site."""
        return reverse("docs_page", args=[self.name]) if self.name else reverse("docs_index")


def doc_pages() -> list[DocPage]:
    """Return the README and every docs/*.md page, in reading order."""
    names = [path.stem for path in (Path(settings.BASE_DIR) / "docs").glob("*.md")]
    ordered = [name for name in READING_ORDER if name in names]
    ordered += sorted(set(names) - set(ordered))
    return [DocPage("", README), *(DocPage(name, f"docs/{name}.md") for name in ordered)]


@lru_cache(maxsize=64)
def _rendered(path: str, modified_ns: int, routes: tuple[tuple[str, str], ...]) -> RenderedPage:
    # Keyed by the file's modification time, so an edited page shows at once under `make run`.
    text = (Path(settings.BASE_DIR) / path).read_text()
    return render_markdown(text, path, dict(routes).get)


def rendered_page(page: DocPage, pages: list[DocPage]) -> RenderedPage:
    """Return the page as HTML, its links to the other pages pointing at their site addresses."""
    routes = tuple((other.path, other.url) for other in pages)
    modified = (Path(settings.BASE_DIR) / page.path).stat().st_mtime_ns
    return _rendered(page.path, modified, routes)


def _show(request: HttpRequest, page: DocPage, pages: list[DocPage]) -> HttpResponse:
    contents = [(other, rendered_page(other, pages).title) for other in pages]
    context = {"page": page, "rendered": rendered_page(page, pages), "contents": contents}
    return render(request, "webapp/docs_page.html", context)


@require_GET
def docs_index(request: HttpRequest) -> HttpResponse:
    """The README, the way into the documentation."""
    pages = doc_pages()
    return _show(request, pages[0], pages)


@require_GET
def docs_page(request: HttpRequest, page_name: str) -> HttpResponse:
    """One page of docs/."""
    pages = doc_pages()
    page = next((page for page in pages if page.name == page_name and page_name), None)
    if page is None:
        raise Http404("No such documentation page.")
    return _show(request, page, pages)
