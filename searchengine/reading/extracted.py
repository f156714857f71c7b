"""What an extractor gives for one file: its text, a title, its sections (where each heading or page starts, with
a label such as "Install › On Linux" or "page 3") and its blocks (where each paragraph, list item or code block
starts), from which passages are cut along the document's own structure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from searchengine.errors import SearchEngineError

SECTION_SEPARATOR = " › "
"""Between the headings of a heading path: "Tutorial › Lists"."""


class Unreadable(SearchEngineError):
    """A file an extractor cannot read, with the reason in words ("encrypted", "no text layer: needs OCR");
    the file is skipped and counted, never the end of a run."""


@dataclass
class Extracted:
    """One file's text and structure, built up by an extractor block by block."""

    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    """Fields of the file's own (Markdown front matter, a PDF's document info), kept as the document's metadata."""
    sections: list[tuple[int, str]] = field(default_factory=list)
    """(start character, label) of each heading's section or page, in order."""
    blocks: list[int] = field(default_factory=list)
    """Start character of each block, in order: where a passage may begin."""
    paged: bool = False
    """Whether each section is a page, made a document of its own (a PDF's pages, labelled "page N")."""
    _parts: list[str] = field(default_factory=list)
    _length: int = 0

    @property
    def text(self) -> str:
        """The text so far: the blocks joined by blank lines."""
        return "".join(self._parts)

    def add_block(self, text: str, section: str | None = None) -> None:
        """Append one block of text (blank ones are dropped); `section` starts a new section here with that label."""
        text = text.strip()
        if not text:
            if section is not None:  # a heading with no text of its own still names what follows
                self.sections.append((self._length, section))
            return
        if self._parts:
            self._parts.append("\n\n")
            self._length += 2
        if section is not None:
            self.sections.append((self._length, section))
        self.blocks.append(self._length)
        self._parts.append(text)
        self._length += len(text)


class HeadingPath:
    """The headings above the current point of a document, kept by level, as a label: "Guide › Install"."""

    def __init__(self) -> None:
        self._levels: list[tuple[int, str]] = []

    def enter(self, level: int, heading: str) -> str:
        """The label of a heading of `level` (1 for h1) with text `heading`, below the open headings above it."""
        self._levels = [(lvl, text) for lvl, text in self._levels if lvl < level]
        self._levels.append((level, " ".join(heading.split())))
        return SECTION_SEPARATOR.join(text for _, text in self._levels if text)
