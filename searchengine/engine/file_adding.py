"""Files read by their format (folders, Markdown, HTML, PDF) on their way into an index: refuse a read that found
nothing (or, strictly, skipped a file), and add files to an existing index as `sync` would read them again
(IndexRequest's append, `searchengine add FOLDER`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from searchengine.engine.wording import counted
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:
    from searchengine.engine.search_engine import SearchEngine
    from searchengine.indexer.tables.store import Document
    from searchengine.reading.corpus import JsonFields
    from searchengine.reading.file_documents import FileReport
    from searchengine.reading.file_rules import FileRules


def check_files_read(report: FileReport, documents: list[Document], roots: list[Path], strict: bool) -> None:
    """Refuse a run that read nothing, or (with --strict) one that skipped a file, before anything is written."""
    if strict and report.skipped:
        first = report.skipped[0]
        raise SearchEngineError(
            f"{counted(len(report.skipped), 'file')} could not be read, e.g. {first.shown}: {first.reason} (--strict "
            "writes nothing then; drop --strict to skip them)"
        )
    if not documents:
        names = ", ".join(map(str, roots))
        skipped = report.skipped[0] if report.skipped else None
        raise SearchEngineError(
            f"found no file to read in {names} (Markdown, HTML, PDF, .txt, .jsonl or .csv, gzipped or not"
            + (
                f"; {counted(len(report.skipped), 'file')} skipped, e.g. {skipped.shown}: {skipped.reason}"
                if skipped
                else ""
            )
            + ")"
        )


def add_files(
    engine: SearchEngine, roots: list[Path], rules: FileRules, strict: bool, progress: bool, fields: JsonFields
) -> FileReport:
    """Add the files under `roots` to an index (a file already in it is replaced: the pages and records it no
    longer has are deleted), and record the new folders so `sync` reads them too. Records of .jsonl and .csv
    files are read with the fields the index recorded: `fields` other than the defaults must be the same, since
    `sync` reads them again that way."""
    from searchengine.engine.files import (
        add_roots,
        as_recorded,
        dropped_ids,
        ids_by_path,
        ids_read,
        read_paths,
        recorded_fields,
        recorded_folders,
    )
    from searchengine.reading.corpus import JsonFields
    from searchengine.reading.walk import absolute_path

    folders = recorded_folders(engine.reading())
    roots = [as_recorded(absolute_path(root), folders) if folders else root for root in roots]
    reading, base = add_roots(engine.reading(), roots, rules)
    if len(engine) == 0:  # an empty index (one `index --append` has just made) reads records as it is told
        reading["fields"] = {"text": fields.text, "title": fields.title, "id": fields.id}
    recorded = recorded_fields(reading) or JsonFields()
    if not fields.plain and fields != recorded:
        raise SearchEngineError(
            f"this index reads the records of .jsonl and .csv files with --text-field {recorded.text}"
            + (f" --title-field {recorded.title}" if recorded.title else "")
            + (f" --id-field {recorded.id}" if recorded.id else "")
            + ", as `sync` will read them again; add files with the same fields (or none)"
        )
    documents, report = read_paths(roots, rules, base, progress=progress, fields=recorded)
    check_files_read(report, documents, roots, strict)
    dropped = dropped_ids(ids_read(documents), ids_by_path(engine))
    if dropped:  # before the add, as sync does: killed between the two, the file's old facts make sync read it again
        engine.delete(external_ids=dropped, merge=False)
    engine.add(documents, progress=progress, reading=reading)
    return report
