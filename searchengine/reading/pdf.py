"""PDF (.pdf): the text layer page by page, read with pypdf (pure Python). Each page is a section labelled
"page N" (numbered from 1, as a viewer counts them); the title is the document info's /Title, else the first line.
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
        extracted = Extracted()
        for number, page in enumerate(reader.pages, start=1):
            paragraphs = PARAGRAPH_BREAK.split(page.extract_text() or "")
            label = f"page {number}"
            for position, paragraph in enumerate(paragraphs):
                extracted.add_block(paragraph, label if position == 0 else None)
        info = reader.metadata
    except Unreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise Unreadable(f"is not a PDF pypdf can read ({type(exc).__name__}: {exc})") from None
    if not extracted.text.strip():
        raise Unreadable("has no text layer (a scanned PDF); run OCR on it first, e.g. `ocrmypdf in.pdf out.pdf`")
    title = info.title if info is not None and isinstance(info.title, str) else None
    extracted.title = (title or "").strip() or extracted.text.strip().splitlines()[0].strip()[:200]
    return extracted
