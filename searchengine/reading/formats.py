"""Which extractor reads which file, by its suffix: a new format is one module with an `extract(data, name)`
function plus one line here. Record files (.jsonl, .csv) are read record by record instead (reading/records.py).
A gzipped file (`notes.jsonl.gz`) is read as the file it holds (`notes.jsonl`), as a corpus file named on the
command line is."""

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
RECORD_FORMATS = {".jsonl": "jsonl", ".csv": "csv"}
"""Suffix (lower case) -> format name of the files whose records (lines, rows) are documents of their own."""
CORPUS_FORMATS = ("text", *RECORD_FORMATS.values())
"""Formats a file named alone on the command line is read in as a corpus: one document per line or record."""
SUFFIXES = tuple(sorted([*EXTRACTORS, *RECORD_FORMATS]))
"""Every suffix read from folders (each of them gzipped too: `.jsonl.gz`)."""
GZIP = ".gz"


def is_gzipped(path: Path) -> bool:
    """Whether a file is gzipped, by its name: `notes.jsonl.gz`."""
    return path.suffix.lower() == GZIP


def unzipped_name(path: Path) -> Path:
    """The name of the file a gzipped file holds (`notes.jsonl` for `notes.jsonl.gz`); other names as they are."""
    return path.with_suffix("") if is_gzipped(path) else path


def format_of(path: Path) -> str | None:
    """The format a file is read as (that of the file it holds, for a gzipped one), None for a suffix no extractor
    reads."""
    suffix = unzipped_name(path).suffix.lower()
    found = EXTRACTORS.get(suffix)
    return found[0] if found else RECORD_FORMATS.get(suffix)


def reads_records(path: Path) -> bool:
    """Whether a file's records (lines, rows) are its documents: a .jsonl or .csv (gzipped or not)."""
    return unzipped_name(path).suffix.lower() in RECORD_FORMATS


def extractor_of(path: Path) -> Extractor:
    """The extractor of a file whose format is known and not a record format (`format_of` is not None)."""
    return EXTRACTORS[unzipped_name(path).suffix.lower()][1]
