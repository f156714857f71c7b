"""The text extractors compared by benchmarks/files/file_search.py: each reads one file and returns its pages.

A page is what one JSON line of the converter holds: the whole file for HTML and Markdown, one page for a PDF
(numbered from 1, as a PDF viewer numbers them). Each extractor is imported only when it runs, so the harness and
its smoke test need none of them installed. A file an extractor cannot read raises; the benchmark counts it as
that extractor's failure and names the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Page:
    """The text of one file, or of one page of a PDF (`page` numbered from 1; None for a whole file)."""

    title: str
    text: str
    page: int | None = None


Extractor = Callable[[Path], list[Page]]

NON_CONTENT = "script, style, noscript, nav, header, footer, aside, form, [role=navigation], [role=search]"
"""What the selectolax variant drops: code, styling and the ARIA/HTML5 navigation landmarks (nothing site-specific)."""


def html_bs4_get_text(path: Path) -> list[Page]:
    """The converter a user writes today: BeautifulSoup's get_text() of the whole page, title from <title>."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_bytes(), "html.parser")
    title = soup.title.get_text(strip=True) if soup.title else path.stem
    return [Page(title, soup.get_text(" "))]


def html_selectolax_main(path: Path) -> list[Page]:
    """selectolax (lexbor): drop script, style and navigation landmarks, keep <main>/[role=main] (else <body>)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(path.read_bytes())
    title_node = tree.css_first("title")
    title = title_node.text(strip=True) if title_node else path.stem
    for node in tree.css(NON_CONTENT):
        node.decompose()
    main = tree.css_first("main, [role=main]") or tree.body
    return [Page(title, main.text(separator=" ") if main else "")]


def html_trafilatura(path: Path) -> list[Page]:
    """trafilatura's main-text extraction (its defaults, tables and code kept), title from its metadata."""
    import trafilatura

    html = path.read_text(encoding="utf-8", errors="replace")
    extracted = trafilatura.bare_extraction(html, include_tables=True, with_metadata=True)
    if extracted is None:
        raise ValueError("trafilatura found no main text")
    return [Page(extracted.title or path.stem, extracted.text or "")]


def markitdown_whole(path: Path) -> list[Page]:
    """markitdown's Markdown of the whole file (its HTML converter: BeautifulSoup and markdownify)."""
    from markitdown import MarkItDown

    result = MarkItDown().convert(str(path))
    return [Page(result.title or path.stem, result.markdown)]


def pdf_markitdown_pages(path: Path) -> list[Page]:
    """markitdown's Markdown of each page, each page handed to it as a one-page PDF: of a whole PDF it returns
    one text without page breaks (pdfplumber's pages joined, or pdfminer's with the form feeds gone)."""
    from io import BytesIO

    from markitdown import MarkItDown, StreamInfo
    from pypdf import PdfReader, PdfWriter

    converter = MarkItDown()
    pages = []
    for number, page in enumerate(PdfReader(path).pages, start=1):
        writer, one_page = PdfWriter(), BytesIO()
        writer.add_page(page)
        writer.write(one_page)
        one_page.seek(0)
        result = converter.convert_stream(one_page, stream_info=StreamInfo(extension=".pdf"))
        pages.append(Page(path.stem, result.markdown, number))
    return pages


def pdf_pypdf(path: Path) -> list[Page]:
    """pypdf's text of each page, title from the document information (else the file name)."""
    from pypdf import PdfReader

    reader = PdfReader(path)
    title = (reader.metadata.title if reader.metadata else None) or path.stem
    return [Page(title, page.extract_text() or "", number) for number, page in enumerate(reader.pages, start=1)]


def pdf_pdfminer(path: Path) -> list[Page]:
    """pdfminer.six's text of each page (its default layout analysis)."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    return [
        Page(path.stem, "".join(part.get_text() for part in layout if isinstance(part, LTTextContainer)), number)
        for number, layout in enumerate(extract_pages(path), start=1)
    ]


def markdown_raw(path: Path) -> list[Page]:
    """The Markdown file's own text, title from its first heading (else the file's folder name)."""
    text = path.read_text(encoding="utf-8")
    return [Page(markdown_title(text) or path.parent.name, text)]


def markdown_it_text(path: Path) -> list[Page]:
    """The text markdown-it-py parses out of the file (inline text and code blocks, markup dropped)."""
    from markdown_it import MarkdownIt

    source = path.read_text(encoding="utf-8")
    parts: list[str] = []
    for token in MarkdownIt("commonmark").enable("table").parse(source):
        if token.type == "inline":
            parts.append("".join(child.content for child in token.children or () if child.type in TEXT_TOKENS))
        elif token.type in ("fence", "code_block"):
            parts.append(token.content)
    return [Page(markdown_title(source) or path.parent.name, "\n".join(part for part in parts if part.strip()))]


TEXT_TOKENS = ("text", "code_inline", "softbreak", "hardbreak")
"""The inline tokens whose content is text a reader sees (links and emphasis contribute their inner text tokens)."""


def markdown_title(text: str) -> str | None:
    """The text of the first ATX heading of a Markdown document, if it has one."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "heading_open":
            return inline.content.strip() or None
    return None


EXTRACTORS: dict[str, dict[str, Extractor]] = {
    "html": {
        "bs4-get-text": html_bs4_get_text,
        "selectolax-main": html_selectolax_main,
        "trafilatura": html_trafilatura,
        "markitdown": markitdown_whole,
    },
    "pdf": {"pypdf": pdf_pypdf, "pdfminer": pdf_pdfminer, "markitdown": pdf_markitdown_pages},
    "markdown": {"raw": markdown_raw, "markdown-it": markdown_it_text},
}
"""Extractors by format, by variant name; the first of each format is the baseline the others are compared to."""

DISTRIBUTIONS = {
    "bs4-get-text": ["beautifulsoup4"],
    "selectolax-main": ["selectolax"],
    "trafilatura": ["trafilatura"],
    "markitdown": ["markitdown[pdf]"],
    "pypdf": ["pypdf"],
    "pdfminer": ["pdfminer.six"],
    "raw": [],
    "markdown-it": ["markdown-it-py"],
}
"""The distributions (with extras) each extractor needs, whose installed size the benchmark reports."""
