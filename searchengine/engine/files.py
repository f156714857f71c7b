"""Folders of files as an index: read them (searchengine/reading) into documents whose ids are their paths,
record how they were read, and `sync` the index with them later, re-reading only the files that changed.

An index records how it reads its input (the build setting "reading"):
    {"fields": {"text": ..., "title": ..., "id": ...},            the JSON fields (a .jsonl corpus)
     "sources": [...],                                             what it was built from (absolute paths, or "-")
     "files": {"roots": [...], "base": ..., "rules": {...}}}       folders and files read by format, when any
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.engine.corpus import STDIN, JsonFields
from searchengine.engine.indexing import READING
from searchengine.errors import SearchEngineError
from searchengine.indexer.store import Document
from searchengine.reading.file_documents import FileFacts, FileReport, read_files
from searchengine.reading.file_rules import FileRules
from searchengine.reading.walk import common_base

if TYPE_CHECKING:
    from searchengine.engine.search_engine import SearchEngine

FACT_FIELDS = ("sha256", "size", "mtime_ns", "file")
"""The metadata `sync` compares a file with (searchengine/reading/file_documents.py writes them)."""


def source_name(source: object) -> str | None:
    """How the record names an input: a file's absolute path, "-" for standard input, None for texts given in
    Python (nothing to compare a later build with)."""
    if isinstance(source, (str, Path)):
        return STDIN if str(source) == STDIN else str(Path(source).absolute())
    return None


def fields_record(fields: JsonFields, corpus: object) -> dict[str, Any]:
    """The record of an index built from a corpus file (or texts): its JSON fields and its source."""
    name = source_name(corpus)
    return {
        "fields": {"text": fields.text, "title": fields.title, "id": fields.id},
        "sources": [] if name is None else [name],
    }


def files_record(roots: Sequence[Path], base: Path, rules: FileRules) -> dict[str, Any]:
    """The record of an index built from folders and files read by format."""
    absolute = [str(root.absolute()) for root in roots]
    return {
        "fields": {"text": "text", "title": None, "id": None},
        "sources": absolute,
        "files": {"roots": absolute, "base": str(base.absolute()), "rules": rules.as_json()},
    }


def recorded_fields(reading: dict[str, Any]) -> JsonFields | None:
    """The JSON fields an index was built with, None where it recorded none (or not in a shape read here)."""
    fields = reading.get("fields")
    if not isinstance(fields, dict) or not isinstance(fields.get("text"), str):
        return None
    title, identifier = fields.get("title"), fields.get("id")
    if not isinstance(title, (str, type(None))) or not isinstance(identifier, (str, type(None))):
        return None
    return JsonFields(fields["text"], title, identifier)


def recorded_rules(reading: dict[str, Any]) -> FileRules:
    """The file rules an index was built with (the defaults where none were recorded)."""
    rules = (reading.get("files") or {}).get("rules") or {}
    return FileRules(
        tuple(str(pattern) for pattern in rules.get("include", ())),
        tuple(str(pattern) for pattern in rules.get("exclude", ())),
        float(rules.get("max_mb", FileRules.max_mb)),
    )


def is_file_input(paths: Sequence[str], whole: bool) -> bool:
    """Whether `index PATH...` reads files by their format (folders, Markdown, HTML, PDF; .txt with --whole)
    rather than a corpus file one document per line (.txt) or record (.jsonl)."""
    from searchengine.reading.formats import format_of

    if len(paths) > 1 or whole:
        return True
    path = Path(paths[0])
    return paths[0] != STDIN and (path.is_dir() or format_of(path) not in (None, "text"))


def read_paths(
    roots: Sequence[Path],
    rules: FileRules,
    base: Path | None = None,
    known: dict[str, FileFacts] | None = None,
    progress: bool = False,
) -> tuple[list[Document], FileReport]:
    """The documents of the files under `roots` (ids relative to `base`, by default the roots' common folder) and
    what reading them found; files in `known` whose facts match are left out as unchanged."""
    from tqdm import tqdm

    report = FileReport()
    base = common_base(roots) if base is None else base
    documents = []
    with tqdm(desc="Reading files", unit=" files", disable=not progress, delay=1.0, leave=False) as bar:
        for document in read_files(roots, base, rules, report, known):
            documents.append(document)
            bar.update()
    return documents, report


@dataclass
class SyncReport:
    """What `sync` did: files added, updated (changed content), removed (gone from the folders), unchanged, and
    skipped (with reasons), and where the time went."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    files: FileReport = field(default_factory=FileReport)
    stages: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


def sync_index(engine: SearchEngine, roots: Sequence[Path] | None = None, progress: bool = False) -> SyncReport:
    """Bring the index in line with its folders (or `roots`, which must be among them or under them): embed the
    files that are new or whose content changed, delete the documents of files that are gone, keep the rest
    (ids included). Its cost follows what changed: an unchanged file costs one stat, a touched one a hash."""
    started = time.perf_counter()
    reading = engine.reading()
    files = reading.get("files")
    if not isinstance(files, dict) or not files.get("roots"):
        raise SearchEngineError(
            f"the index in {engine.path} was not built from folders or files, so there is nothing to sync; build "
            "one with `searchengine index FOLDER`"
        )
    recorded = [Path(root) for root in files["roots"]]
    roots = recorded if not roots else [root.absolute() for root in roots]
    for root in roots:
        if not any(root == folder or folder in root.parents for folder in recorded):
            raise SearchEngineError(
                f"{root} is not one of the folders this index reads ({', '.join(map(str, recorded))}); add it with "
                f"`searchengine index {root} --append`"
            )
    report = SyncReport()
    stored = engine.metadata_by_external_id(FACT_FIELDS)
    known = {
        path: FileFacts(size, mtime_ns, digest)
        for path, (digest, size, mtime_ns, _) in stored.items()
        if isinstance(digest, str) and isinstance(size, int) and isinstance(mtime_ns, int)
    }
    step = time.perf_counter()
    documents, report.files = read_paths(roots, recorded_rules(reading), Path(files["base"]), known, progress)
    report.stages["reading"] = time.perf_counter() - step
    for document in documents:
        (report.updated if document.external_id in known else report.added).append(document.external_id)
    seen = report.files.seen
    report.removed = sorted(
        path
        for path, (_, _, _, location) in stored.items()
        if path not in seen
        and isinstance(location, str)
        and any(Path(location) == root or root in Path(location).parents for root in roots)
        and not _kept_for_a_skip(path, report.files)
    )
    if documents:
        step = time.perf_counter()
        engine.add(documents, progress=progress, merge=False)
        report.stages["adding"] = time.perf_counter() - step
    if report.removed:
        step = time.perf_counter()
        engine.delete(external_ids=report.removed, merge=False)
        report.stages["removing"] = time.perf_counter() - step
    if documents or report.removed:
        engine.merge()
    report.seconds = time.perf_counter() - started
    return report


def _kept_for_a_skip(path: str, files: FileReport) -> bool:
    """A document stays while its file or a folder above it could not be read this time: gone is not the same
    as unreadable."""
    return any(path == skip.shown or path.startswith(skip.shown.rstrip("/") + "/") for skip in files.skipped)


@dataclass(frozen=True)
class ExistingIndex:
    """What an index directory already holds, as far as replacing it is concerned."""

    documents: int
    sources: list[str]


def existing_index(path: Path) -> ExistingIndex | None:
    """The index already in `path` (None where there is none), read without loading its model."""
    from searchengine.indexer.index_directory import IndexDirectory
    from searchengine.indexer.store import DocumentStore

    directory = IndexDirectory(path)
    if not directory.exists():
        return None
    manifest = directory.read_manifest()
    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        sources = (store.settings.get(READING) or {}).get("sources")
        return ExistingIndex(store.count(), sources if isinstance(sources, list) else [])
    finally:
        store.close()


def check_replacing(path: Path, sources: Sequence[object], replace: bool) -> None:
    """Refuse to replace an index of other documents unless told (`--replace`): building from the same input
    again is a rebuild, building from another one would silently discard what the index holds."""
    existing = existing_index(path)
    if existing is None or replace or existing.documents == 0:
        return
    names = [source_name(source) for source in sources]
    if existing.sources and names == existing.sources and STDIN not in names:
        return
    was = ", ".join(existing.sources) if existing.sources else "an input this version did not record"
    raise SearchEngineError(
        f"{path} already holds an index of {existing.documents:,} documents from {was}; pass --replace to replace "
        "it, --append to add to it, or --index-dir DIR to build another"
    )


def add_roots(reading: dict[str, Any], roots: Sequence[Path], rules: FileRules) -> tuple[dict[str, Any], Path]:
    """The record of an index after adding `roots` to it, and the base its new documents' paths are relative to
    (the index's own base where it has one, so one file has one id)."""
    files = reading.get("files") if isinstance(reading.get("files"), dict) else None
    base = Path(files["base"]) if files and files.get("base") else common_base(roots)
    known = list(files["roots"]) if files else []
    added = [str(root.absolute()) for root in roots if str(root.absolute()) not in known]
    record = files_record([Path(root) for root in known + added], base, rules)
    record["sources"] = list(reading.get("sources") or []) + [
        root for root in added if root not in reading.get("sources", [])
    ]
    return record, base
