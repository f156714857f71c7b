"""Which extractor reads which file, by its suffix: a new format is one module with an `extract(data, name)`
function plus one line here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchengine.reading import html, markdown, pdf, text
from searchengine.reading.extracted import Extracted

Extractor = Callable[[bytes, str], Extracted]

EXTRACTORS: dict[str, tuple[str, Extractor]] = {
    ".md": ("markdown", markdown.extract),
    ".markdown": ("markdown", markdown.extract),
    ".html": ("html", html.extract),
    ".htm": ("html", html.extract),
    ".pdf": ("pdf", pdf.extract),
    ".txt": ("text", text.extract),
}
"""Suffix (lower case) -> (format name, extractor)."""


def format_of(path: Path) -> str | None:
    """The format a file is read as, None for a suffix no extractor reads."""
    found = EXTRACTORS.get(path.suffix.lower())
    return found[0] if found else None


def extractor_of(path: Path) -> Extractor:
    """The extractor of a file whose format is known (`format_of` is not None)."""
    return EXTRACTORS[path.suffix.lower()][1]
