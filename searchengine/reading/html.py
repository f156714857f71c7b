"""HTML (.html, .htm): the page's main text, parsed with BeautifulSoup (Python's own html.parser, so broken markup
is read as a browser would rather than refused). The title is `<title>` (else the first `<h1>`); script, style,
navigation, headers, footers, sidebars and forms are dropped; the main part (`<main>`, `[role=main]`, `<article>`)
is read where the page marks one, else the body. Headings give the sections."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Comment, Doctype, NavigableString, ProcessingInstruction, Tag

from searchengine.reading.extracted import Extracted, HeadingPath, Unreadable

DROPPED = {
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "button", "svg",
    "iframe", "object", "select", "head",
}  # fmt: skip
"""Elements whose text is not the page's content."""
DROPPED_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary"}
DROPPED_CLASSES = {"headerlink", "sphinxsidebar", "related", "breadcrumb", "toc"}
"""Sphinx's pilcrow links and sidebars, and the usual names of breadcrumbs and tables of contents."""
BLOCKS = {
    "p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd", "pre", "blockquote", "table",
    "tr", "td", "th", "figure", "figcaption", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "details", "summary",
}  # fmt: skip
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_SPACES = re.compile(r"\s+")


def extract(data: bytes, _name: str) -> Extracted:
    """The title, main text, sections and blocks of one HTML page's bytes (any encoding the page declares)."""
    soup = BeautifulSoup(data, "html.parser")
    extracted = Extracted()
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    root = soup.find("main") or soup.find(attrs={"role": "main"}) or soup.find("article") or soup.body or soup
    reader = _Reader(extracted)
    try:
        reader.read(root)
    except RecursionError:
        raise Unreadable("is nested too deeply to read as HTML") from None
    reader.flush()
    if not title:
        first = root.find("h1") if isinstance(root, Tag) else None
        title = first.get_text(" ", strip=True) if first else ""
    extracted.title = _SPACES.sub(" ", title).strip() or None
    return extracted


class _Reader:
    """Walks the element tree in document order, gathering inline text into blocks."""

    def __init__(self, extracted: Extracted) -> None:
        self.extracted = extracted
        self.headings = HeadingPath()
        self.inline: list[str] = []

    def flush(self, section: str | None = None) -> None:
        self.extracted.add_block(_SPACES.sub(" ", "".join(self.inline)), section)
        self.inline = []

    def read(self, node: Tag) -> None:
        for child in node.children:
            if isinstance(child, (Comment, Doctype, ProcessingInstruction)):
                continue
            if isinstance(child, NavigableString):
                self.inline.append(str(child))
            elif isinstance(child, Tag) and not _dropped(child):
                self._element(child)

    def _element(self, element: Tag) -> None:
        name = element.name
        if name in HEADINGS:
            self.flush()
            heading = _SPACES.sub(" ", element.get_text(" ")).strip()
            self.inline.append(heading)
            self.flush(self.headings.enter(int(name[1]), heading))
        elif name == "pre":
            self.flush()
            self.extracted.add_block(element.get_text())
        elif name in BLOCKS:
            self.flush()
            self.read(element)
            self.flush()
        else:
            self.read(element)


def _dropped(element: Tag) -> bool:
    if element.name in DROPPED:
        return True
    attrs = element.attrs or {}
    if attrs.get("role") in DROPPED_ROLES or attrs.get("hidden") is not None:
        return True
    classes = attrs.get("class") or []
    return any(name in DROPPED_CLASSES for name in classes)
