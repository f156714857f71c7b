"""HTML (.html, .htm): the page's main text, parsed with BeautifulSoup (Python's own html.parser, so broken markup
is read as a browser would rather than refused). The title is `<title>` (else the first `<h1>`); script, style,
navigation, sidebars, form controls, the page's own header and footer, and the symbol links to the page's own
headings are dropped; the main part (`<main>`, `[role=main]`) is read where the page marks one, else the whole
body. Headings give the sections."""

from __future__ import annotations

import re
import warnings

from bs4 import BeautifulSoup, Comment, Doctype, NavigableString, ProcessingInstruction, Tag

from searchengine.reading.extracted import Extracted, HeadingPath

DROPPED = {
    "script", "style", "noscript", "template", "nav", "aside", "button", "svg", "iframe", "object", "select",
    "textarea", "input", "head",
}  # fmt: skip
"""Elements whose text is not the page's content."""
PAGE_CHROME = {"header", "footer"}
"""Dropped where they frame the page; kept inside an article, main part or section, whose heading they may hold."""
DROPPED_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary"}
DROPPED_CLASSES = {"headerlink", "sphinxsidebar", "related", "breadcrumb", "toc"}
"""Sphinx's pilcrow links and sidebars, and the usual names of breadcrumbs and tables of contents."""
BLOCKS = {
    "p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd", "pre", "blockquote", "table",
    "tr", "td", "th", "figure", "figcaption", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "details", "summary",
    "form", "header", "footer",
}  # fmt: skip
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
SYMBOL_ANCHOR_NODES = 8
"""Nodes of a same-page link looked at to tell a symbol anchor (`¶`, `#`, an icon) from a worded link."""
_SPACES = re.compile(r"\s+")
_END = object()


def extract(data: bytes, _name: str) -> Extracted:
    """The title, main text, sections and blocks of one HTML page's bytes (any encoding the page declares)."""
    with warnings.catch_warnings():  # bs4 warns on stderr about undecodable bytes; they become U+FFFD
        warnings.simplefilter("ignore")
        soup = BeautifulSoup(data, "html.parser")
    extracted = Extracted()
    root = soup.find("main") or soup.find(attrs={"role": "main"}) or soup.body or soup
    reader = _Reader(extracted)
    reader.read(root)
    reader.flush()
    extracted.title = _title(soup, root)
    return extracted


def _title(soup: BeautifulSoup, root: Tag) -> str | None:
    """The page's <title> (not one inside an SVG image), else its first <h1>."""
    title = next((tag for tag in soup.find_all("title") if tag.find_parent("svg") is None), None)
    text = title.get_text(" ", strip=True) if title else ""
    if not text:
        first = root.find("h1") if isinstance(root, Tag) else None
        text = first.get_text(" ", strip=True) if first else ""
    return _SPACES.sub(" ", text).strip() or None


class _Reader:
    """Walks the element tree in document order, gathering inline text into blocks. The walk keeps its own
    stack: html.parser nests every unclosed <p> or <li> (valid HTML) inside the one before, deeper than Python's
    recursion allows."""

    def __init__(self, extracted: Extracted) -> None:
        self.extracted = extracted
        self.headings = HeadingPath()
        self.inline: list[str] = []

    def flush(self, section: str | None = None) -> None:
        self.extracted.add_block(_SPACES.sub(" ", "".join(self.inline)), section)
        self.inline = []

    def read(self, root: Tag) -> None:
        stack = [iter(root.children)]
        ends: list[bool] = [False]
        while stack:
            child = next(stack[-1], _END)
            if child is _END:
                stack.pop()
                if ends.pop():
                    self.flush()
            elif isinstance(child, (Comment, Doctype, ProcessingInstruction)):
                continue
            elif isinstance(child, NavigableString):
                self.inline.append(str(child))
            elif isinstance(child, Tag) and not _dropped(child):
                name = child.name
                if name in HEADINGS:
                    self.flush()
                    heading = _SPACES.sub(" ", _shown_text(child)).strip()
                    self.inline.append(heading)
                    self.flush(self.headings.enter(int(name[1]), heading))
                elif name == "pre":
                    self.flush()
                    self.extracted.add_block(child.get_text())
                else:
                    block = name in BLOCKS
                    if block:
                        self.flush()
                    stack.append(iter(child.children))
                    ends.append(block)


def _shown_text(element: Tag) -> str:
    """The text of `element` as the page shows it (its strings joined as they stand, as the body's are), without
    that of the elements inside it that are dropped (a heading's pilcrow link). Walked with a stack of its own, as
    the reader walks, so an unclosed heading that holds the rest of the page costs one pass over it."""
    parts: list[str] = []
    stack = [iter(element.children)]
    while stack:
        child = next(stack[-1], _END)
        if child is _END:
            stack.pop()
        elif isinstance(child, (Comment, Doctype, ProcessingInstruction)):
            continue
        elif isinstance(child, NavigableString):
            parts.append(str(child))
        elif isinstance(child, Tag) and not _dropped(child):
            stack.append(iter(child.children))
    return "".join(parts)


def _dropped(element: Tag) -> bool:
    if element.name in DROPPED:
        return True
    if element.name in PAGE_CHROME and element.find_parent(["article", "main", "section"]) is None:
        return True
    attrs = element.attrs or {}
    if attrs.get("role") in DROPPED_ROLES or attrs.get("hidden") is not None:
        return True
    classes = attrs.get("class") or []
    return any(name in DROPPED_CLASSES for name in classes) or _symbol_anchor(element)


def _symbol_anchor(element: Tag) -> bool:
    """A link to a place on the same page whose text is only symbols: the `#`, `§` or `¶` (or an invisible
    character) that Hugo, Docusaurus, MkDocs and GitHub put in each heading to link to it, or a "back to top" arrow.
    Its text says nothing of the page. Only its first SYMBOL_ANCHOR_NODES nodes are looked at (such a link holds a
    character or an icon), so links nested in links cost no more than one look each."""
    href = element.get("href") if element.name == "a" else None
    if not isinstance(href, str) or not href.startswith("#"):
        return False
    nodes, pending = 0, list(element.children)
    while pending:
        node = pending.pop()
        nodes += 1
        if nodes > SYMBOL_ANCHOR_NODES:
            return False
        if isinstance(node, Tag):
            pending.extend(node.children)
        elif any(c.isalnum() for c in node):
            return False
    return True
