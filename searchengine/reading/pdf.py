"""PDF (.pdf): the text layer page by page, read with pypdf (pure Python). Each page is a section labelled
"page N" (numbered from 1, as a viewer counts them), and becomes a document of its own; the title is the document info's /Title, else the first line.
An encrypted file that opens without a password is read; one that needs a password, or has no text at all (a
scan), is Unreadable."""

from __future__ import annotations

import io
import logging

from searchengine.reading.extracted import Extracted, Unreadable
from searchengine.reading.text import PARAGRAPH_BREAK


def extract(data: bytes, _name: str) -> Extracted:
    """The text of every page of one PDF's bytes, with a section per page."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about odd but readable files are noise here
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("is encrypted; decrypt it first (e.g. `qpdf --decrypt --password=... in.pdf out.pdf`)")
        if len(reader.pages) == 0:
            raise Unreadable("has no pages")
        extracted = Extracted(paged=True)
        for number, page in enumerate(reader.pages, start=1):
            paragraphs = PARAGRAPH_BREAK.split(page.extract_text() or "")
            label = f"page {number}"
            for position, paragraph in enumerate(paragraphs):
                extracted.add_block(paragraph, label if position == 0 else None)
        info = reader.metadata
    except Unreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise Unreadable(_not_read(data, exc)) from None
    if not extracted.text.strip():
        raise Unreadable("has no text layer (a scanned PDF); run OCR on it first, e.g. `ocrmypdf in.pdf out.pdf`")
    title = info.title if info is not None and isinstance(info.title, str) else None
    extracted.title = (title or "").strip() or extracted.text.strip().splitlines()[0].strip()[:200]
    return extracted


def _not_read(data: bytes, error: Exception) -> str:
    """Why pypdf could not read `data`: a file that does not begin as a PDF does (its '%PDF-' header within its
    first 1,024 bytes) is named as what it looks like, since pypdf's own error ("Stream has ended unexpectedly")
    points at a damaged PDF instead of a misnamed file."""
    if not data:
        return "is empty (0 bytes)"
    if b"%PDF-" not in data[:1024]:
        start = data[:1024].lstrip()
        if start.startswith(b"<?xml") and b"<html" not in start.lower():  # XHTML is HTML
            kind = "XML, which is not read"
        elif start.startswith(b"<"):
            kind = "HTML; rename it .html"
        else:
            kind = "text; rename it .txt" if _is_text(data[:4096]) else "another kind of file"
        return f"is not a PDF (it does not begin with '%PDF-'): it looks like {kind}"
    return f"is not a PDF pypdf can read ({type(error).__name__}: {error})"


def _is_text(start: bytes) -> bool:
    """Whether `start` decodes as UTF-8 text (a character cut at its end allowed) with no NUL byte."""
    try:
        start.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(start) - 3:
            return False
    return b"\x00" not in start
