"""Files as documents: each file read by its format's extractor into one document whose id is its path, with its
title, sections and file facts (size, modification time, sha256) as metadata, and its block and section starts,
along which passages are cut. A file that cannot be read is skipped with its reason, never the end of a run."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchengine.indexer.store import Document
from searchengine.reading.extracted import Unreadable
from searchengine.reading.file_rules import FileRules
from searchengine.reading.formats import extractor_of, format_of
from searchengine.reading.names import printable
from searchengine.reading.walk import Found, Skipped, find_files

FILE_FIELDS = ("path", "file", "format", "title", "sections", "size", "mtime_ns", "sha256")
"""Metadata every document read from a file has; the file's own fields (front matter) never replace these."""


@dataclass
class FileReport:
    """What reading the files found: documents made, per format, and the files skipped with their reasons."""

    read: dict[str, int] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    unchanged: int = 0
    seen: set[str] = field(default_factory=set)
    """Every file found, read or not (what `sync` keeps)."""
    refreshed: set[str] = field(default_factory=set)
    """Files read again because their modification time changed while their content did not: their documents
    are given the new facts (no embedding), so the next sync passes them by a stat again."""


@dataclass(frozen=True)
class FileFacts:
    """What `sync` compares to tell a changed file from an unchanged one."""

    size: int
    mtime_ns: int
    sha256: str


def read_files(
    roots: Sequence[Path], base: Path, rules: FileRules, report: FileReport, known: dict[str, FileFacts] | None = None
) -> Iterator[Document]:
    """The documents of the files under `roots`, ids relative to `base`; skips go to `report.skipped`. A file
    whose path is in `known` with the same size and modification time is left out and counted as unchanged; one
    with the same sha256 is counted as unchanged too and given again, with its new facts (`report.refreshed`)."""
    for item in find_files(roots, base, rules.include, rules.exclude):
        if isinstance(item, Skipped):
            report.skipped.append(item)
            continue
        report.seen.add(item.shown)
        document = _read_one(item, rules, report, (known or {}).get(item.shown))
        if isinstance(document, Skipped):
            report.skipped.append(document)
            if not document.keeps:  # an emptied file is gone as far as the index is concerned
                report.seen.discard(item.shown)
        elif document is not None:
            fmt = document.metadata["format"]
            report.read[fmt] = report.read.get(fmt, 0) + 1
            yield document


def _read_one(found: Found, rules: FileRules, report: FileReport, known: FileFacts | None) -> Document | Skipped | None:
    def skipped(reason: str, keeps: bool = True) -> Skipped:
        return Skipped(printable(found.shown), reason, found.path, keeps)

    try:
        before = os.stat(found.path)
    except OSError as exc:
        return skipped(f"cannot be read ({exc.strerror})")
    if not stat.S_ISREG(before.st_mode):
        return skipped("is not a regular file (a pipe, socket or device); left out")
    if before.st_size > rules.max_mb * 1e6:
        return skipped(f"is {_megabytes(before.st_size)}, over the {rules.max_mb:g} MB limit (--max-file-size)")
    if known is not None and (known.size, known.mtime_ns) == (before.st_size, before.st_mtime_ns):
        report.unchanged += 1
        return None
    try:
        with open(found.path, "rb") as handle:
            data = handle.read(before.st_size + 1)
        after = os.stat(found.path)
    except OSError as exc:
        return skipped(f"cannot be read ({exc.strerror})")
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or len(data) != after.st_size:
        return skipped("changed while it was read; run `searchengine sync` again once it is written")
    digest = hashlib.sha256(data).hexdigest()
    if known is not None and known.sha256 == digest:
        report.unchanged += 1
        report.refreshed.add(found.shown)
    try:
        extracted = extractor_of(found.path)(data, found.shown)
    except Unreadable as exc:
        return skipped(str(exc))
    except Exception as exc:  # noqa: BLE001 (an extractor's failure on one odd file must not stop the run)
        return skipped(f"could not be read as {format_of(found.path)} ({type(exc).__name__}: {exc})")
    text = extracted.text
    if not text.strip():
        return skipped("holds no text", keeps=False)
    facts = {
        "path": found.shown,
        "file": str(found.path.absolute()),
        "format": format_of(found.path),
        "title": extracted.title or found.path.stem,
        "sections": [[start, label] for start, label in extracted.sections],
        "size": after.st_size,
        "mtime_ns": after.st_mtime_ns,
        "sha256": digest,
    }
    own = {key: value for key, value in extracted.metadata.items() if key not in FILE_FIELDS}
    return Document(
        text,
        str(found.path),
        None,
        {**own, **facts},
        found.shown,
        blocks=tuple(extracted.blocks),
        section_starts=tuple(start for start, _ in extracted.sections),
    )


def _megabytes(size: int) -> str:
    """A file size in MB, precise enough that a small one does not read as 0.0 MB."""
    return f"{size / 1e6:,.1f} MB" if size >= 1e5 else f"{size / 1e6:.3g} MB"
