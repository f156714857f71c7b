"""Files as documents: each file read by its format's extractor into one document whose id is its path, with its
title, sections and file facts (size, modification time, sha256) as metadata, and its block and section starts,
along which passages are cut. A file that cannot be read is skipped with its reason, never the end of a run."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchengine.indexer.tables.store import Document
from searchengine.reading.corpus import JsonFields
from searchengine.reading.extracted import Extracted, Unreadable
from searchengine.reading.file_rules import FileRules
from searchengine.reading.formats import extractor_of, format_of, is_gzipped, reads_records, unzipped_name
from searchengine.reading.names import printable
from searchengine.reading.records import records
from searchengine.reading.walk import Found, Skipped, absolute_path, find_files

FILE_FIELDS = ("path", "file", "format", "title", "sections", "page", "record", "size", "mtime_ns", "sha256")
"""Metadata every document read from a file has; the file's own fields (front matter, a record's fields) never
replace these: one of the same name is kept as `own_` + its name (`own_path`), a title that is the title aside."""
OWN = "own_"


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
    roots: Sequence[Path],
    base: Path,
    rules: FileRules,
    report: FileReport,
    known: dict[str, FileFacts] | None = None,
    fields: JsonFields = JsonFields(),
    globs_from: Path | None = None,
) -> Iterator[Document]:
    """The documents of the files under `roots`, ids relative to `base` and sources the files' absolute paths
    (so a document's source does not depend on the folder `index` or `sync` ran in); skips go to `report.skipped`. A file
    whose path is in `known` with the same size and modification time is left out and counted as unchanged; one
    with the same sha256 is counted as unchanged too and given again, with its new facts (`report.refreshed`).
    `fields` name the text, title and id fields of the records of .jsonl and .csv files; `globs_from` as in
    find_files."""
    for item in find_files(roots, base, rules.include, rules.exclude, globs_from):
        if isinstance(item, Skipped):
            report.skipped.append(item)
            continue
        report.seen.add(item.shown)
        documents = _read_one(item, rules, report, (known or {}).get(item.shown), fields)
        if isinstance(documents, Skipped):
            report.skipped.append(documents)
            if not documents.keeps:  # an emptied file is gone as far as the index is concerned
                report.seen.discard(item.shown)
        elif documents is not None:
            fmt = documents[0].metadata["format"]
            report.read[fmt] = report.read.get(fmt, 0) + 1
            yield from documents


def _read_one(
    found: Found, rules: FileRules, report: FileReport, known: FileFacts | None, fields: JsonFields
) -> list[Document] | Skipped | None:
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
    facts = {
        "path": found.shown,
        "file": str(absolute_path(found.path)),
        "format": format_of(found.path),
        "size": after.st_size,
        "mtime_ns": after.st_mtime_ns,
        "sha256": digest,
    }
    try:
        if is_gzipped(found.path):
            data = _unzipped(data, rules.max_mb)
        if reads_records(found.path):
            return _records(found, data, fields, facts) or skipped("holds no record with text", keeps=False)
        extracted = extractor_of(found.path)(data, found.shown)
    except Unreadable as exc:
        return skipped(str(exc))
    except Exception as exc:  # noqa: BLE001 (an extractor's failure on one odd file must not stop the run)
        return skipped(f"could not be read as {format_of(found.path)} ({type(exc).__name__}: {exc})")
    text = extracted.text
    if not text.strip():
        return skipped("holds no text", keeps=False)
    facts["title"] = extracted.title or unzipped_name(found.path).stem
    facts["sections"] = [[start, label] for start, label in extracted.sections]
    own = _own(extracted.metadata, facts["title"])
    if not extracted.paged:
        return [
            Document(
                text,
                facts["file"],
                None,
                {**own, **facts},
                found.shown,
                blocks=tuple(extracted.blocks),
                section_starts=tuple(start for start, _ in extracted.sections),
                headings=((0, facts["title"]), *extracted.sections),
            )
        ]
    return list(_pages(found, extracted, {**own, **facts}))


def _unzipped(data: bytes, max_mb: float) -> bytes:
    """The bytes a gzipped file holds, no more of them than the size limit allows (a small file may unzip to
    gigabytes); a damaged gzip stream is Unreadable."""
    limit = max_mb * 1e6
    chunks, size = [], 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
            while chunk := unzipped.read(1 << 20):
                size += len(chunk)
                if size > limit:
                    raise Unreadable(f"unzips to more than the {max_mb:g} MB limit (--max-file-size)")
                chunks.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise Unreadable(f"is not a readable gzip file ({exc})") from None
    return b"".join(chunks)


def _own(metadata: dict, title: object) -> dict:
    """A file's or record's own fields (front matter, a record's other fields) to keep beside the file's: all of
    them, less a `title` that is the document's title; one named like a field every document read from a file has
    (`path`, `record`...) is kept as `own_path`, `own_record` (`own_own_path` where the record has an `own_path`
    too), since `sync`, hits and filters read the file's under those names."""
    own = {}
    for key, value in metadata.items():
        if key == "title" and isinstance(value, str) and value.strip() == title:
            continue
        name = key
        while name in FILE_FIELDS or (name != key and name in metadata):
            name = OWN + name
        own[name] = value
    return own


def _records(found: Found, data: bytes, fields: JsonFields, facts: dict) -> list[Document]:
    """One document per record of a .jsonl or .csv file, ids `path#N` (its line) or `path#ID` (its id field):
    the record's fields are its metadata, its title field (where the index names one, else its own `title`, where
    that is text) its title."""
    documents = []
    for document in records(data, found.shown, fields):
        title = document.metadata.get("title" if fields.title is None else fields.title)
        title = title.strip() if isinstance(title, str) and title.strip() else unzipped_name(found.path).stem
        metadata = {
            **_own(document.metadata, title),
            **facts,
            "title": title,
            "sections": [[0, f"line {document.line}"]],
            "record": document.line,
        }
        record_id = document.line if document.external_id is None else document.external_id
        documents.append(
            Document(
                document.text,
                facts["file"],
                document.line,
                metadata,
                f"{found.shown}#{record_id}",
                headings=document.headings,
            )
        )
    return documents


def _pages(found: Found, extracted: Extracted, metadata: dict) -> Iterator[Document]:
    """One document per page of a paged file (a PDF): a manual of hundreds of pages is then found page by page,
    as a user cites it, rather than as one document scored by its best passage. Ids are `path#page`."""
    text = extracted.text
    starts = [start for start, _ in extracted.sections]
    for (start, label), end in zip(extracted.sections, [*starts[1:], len(text)]):
        page = text[start:end].rstrip()
        if not page.strip():
            continue
        number = int(label.rsplit(" ", 1)[-1])
        blocks = tuple(block - start for block in extracted.blocks if start <= block < end)
        yield Document(
            page,
            metadata["file"],
            None,
            {**metadata, "page": number, "sections": [[0, label]]},
            f"{found.shown}#{number}",
            blocks=blocks or (0,),
            section_starts=(0,),
            headings=((0, metadata["title"]),),
        )


def _megabytes(size: int) -> str:
    """A file size in MB, precise enough that a small one does not read as 0.0 MB."""
    return f"{size / 1e6:,.1f} MB" if size >= 1e5 else f"{size / 1e6:.3g} MB"
