"""A hit as one line of text: the sentences that show why it matched (searchengine.engine.highlight), else the
passage that matched (or the document's start), with every run of whitespace, line breaks and control or format
characters made one space, cut at a word boundary to a length, with an ellipsis where text was left out."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_SNIPPET_CHARS = 200
"""Characters of a snippet unless told otherwise (`searchengine query --max-chars`)."""
ELLIPSIS = "…"
Span = tuple[int, int]
"""Characters [start, end) of a text."""


@dataclass(frozen=True)
class Highlight:
    """Why a hit matched, as character offsets into its text: what its snippet shows, and the query's words there."""

    span: Span
    """The sentence (or sentences) of the hit's passage nearest to the query: what the snippet shows first."""
    words: tuple[Span, ...] = ()
    """Each word of `span` that is one of the query's (stemmed as the keyword index stems), in order."""


_BREAKS = re.compile(
    r"[\s\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]+"
)
"""Whitespace (line and paragraph separators included), C0 and C1 controls, and the invisible format characters
that could reorder or hide what a terminal shows (bidirectional controls, zero-width characters, soft hyphen)."""
_WORD_CUT_WINDOW = 0.25
"""A cut moves back to the last space only within the last quarter of the snippet, else it splits the word."""


def one_line(text: str) -> str:
    """`text` with each run of whitespace, line breaks and control or format characters made one space, stripped."""
    return _BREAKS.sub(" ", text).strip()


def snippet(text: str, span: tuple[int, int] | None = None, max_chars: int = DEFAULT_SNIPPET_CHARS) -> str:
    """One line of at most `max_chars` characters: `text[span[0]:span[1]]` (the whole text when `span` is None)
    made one line, cut at a word boundary. An ellipsis marks text of the document left out: at the end, and at the
    start when the span starts after some text."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, not {max_chars}")
    start, end = (0, len(text)) if span is None else span
    lead = ELLIPSIS if start > 0 and not _blank(text, 0, start) else ""
    line, stop = _line_prefix(text, start, end, max_chars)
    line = lead + line
    if len(line) <= max_chars and _blank(text, stop, len(text)):
        return line
    if len(line) < max_chars:  # the whole span fits, and the document goes on after it
        return line + ELLIPSIS
    cut = line[: max_chars - 1]  # room for the ellipsis
    space = cut.rfind(" ")
    splits_a_word = line[max_chars - 1 : max_chars] not in ("", " ")
    if splits_a_word and space > 0 and space >= len(cut) * (1 - _WORD_CUT_WINDOW):
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def _blank(text: str, start: int, end: int) -> bool:
    """True when text[start:end] holds nothing but what `one_line` turns into spaces (or nothing at all)."""
    return start >= end or _BREAKS.fullmatch(text, start, end) is not None


def _line_prefix(text: str, start: int, end: int, max_chars: int) -> tuple[str, int]:
    """`text[start:stop]` made one line, for the first `stop` at which that holds more than `max_chars` characters
    (or `end`), and `stop`: a document may be long, and only its snippet's worth is read."""
    window = 4 * (max_chars + 1)
    stop = start
    while True:
        stop = min(end, stop + window)
        line = one_line(text[start:stop])
        if len(line) > max_chars or stop >= end:
            return line, stop
        window *= 2
