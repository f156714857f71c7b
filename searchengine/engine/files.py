"""Folders of files as an index: read them (searchengine/reading) into documents whose ids are their paths,
record how they were read, and `sync` the index with them later, re-reading only the files that changed.

An index records how it reads its input (the build setting "reading"):
    {"fields": {"text": ..., "title": ..., "id": ...},            the JSON fields (a .jsonl or .csv corpus)
     "sources": [...],                                             what it was built from (absolute paths, or "-")
     "files": {"base": ...,                                        what document paths are relative to
               "roots": [{"path": ..., "kind": "folder" or "file", "rules": {...}}, ...]}}
Each folder keeps the --include/--exclude/--max-file-size rules it was given, matched inside it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.engine.corpus_record import source_name
from searchengine.engine.indexing import READING
from searchengine.errors import SearchEngineError
from searchengine.indexer.tables.store import Document
from searchengine.reading.corpus import STDIN, JsonFields
from searchengine.reading.file_documents import FileFacts, FileReport, read_files
from searchengine.reading.file_rules import FileRules
from searchengine.reading.walk import Skipped, absolute_path, common_base, shown_path

if TYPE_CHECKING:
    from searchengine.engine.search_engine import SearchEngine

FACT_FIELDS = ("sha256", "size", "mtime_ns", "file", "path")
"""The metadata `sync` compares a file with (searchengine/reading/file_documents.py writes them); a file's
documents (one, or one per page) all carry its path."""


def root_record(root: Path, rules: FileRules) -> dict[str, Any]:
    """One folder (or file) an index reads, with the rules it was given."""
    return {"path": str(absolute_path(root)), "kind": "folder" if root.is_dir() else "file", "rules": rules.as_json()}


def files_record(
    roots: Sequence[Path], base: Path, rules: FileRules, fields: JsonFields = JsonFields()
) -> dict[str, Any]:
    """The record of an index built from folders and files read by format (`fields`: those of their .jsonl and
    .csv records)."""
    return {
        "fields": {"text": fields.text, "title": fields.title, "id": fields.id},
        "sources": [str(absolute_path(root)) for root in roots],
        "files": {"base": str(absolute_path(base)), "roots": [root_record(root, rules) for root in roots]},
    }


def add_roots(reading: dict[str, Any], roots: Sequence[Path], rules: FileRules) -> tuple[dict[str, Any], Path]:
    """The record of an index after adding `roots` (read with `rules`) to it, and the base its new documents'
    paths are relative to: the index's own where it has one, so one file has one id. A root already recorded
    keeps its rules; the others keep theirs."""
    files = reading.get("files") if isinstance(reading.get("files"), dict) else {}
    base = Path(files["base"]) if files.get("base") else common_base(roots)
    recorded = [dict(root) for root in files.get("roots", []) if isinstance(root, dict)]
    known = {root.get("path") for root in recorded}
    recorded += [root_record(root, rules) for root in roots if str(absolute_path(root)) not in known]
    sources = list(reading.get("sources") or [])
    sources += [root["path"] for root in recorded if root["path"] not in sources]
    fields = reading.get("fields") or {"text": "text", "title": None, "id": None}
    return {"fields": fields, "sources": sources, "files": {"base": str(base), "roots": recorded}}, base


def recorded_fields(reading: dict[str, Any]) -> JsonFields | None:
    """The JSON fields an index was built with, None where it recorded none (or not in a shape read here)."""
    fields = reading.get("fields")
    if not isinstance(fields, dict) or not isinstance(fields.get("text"), str):
        return None
    title, identifier = fields.get("title"), fields.get("id")
    if not isinstance(title, (str, type(None))) or not isinstance(identifier, (str, type(None))):
        return None
    return JsonFields(fields["text"], title, identifier)


def _rules(root: dict[str, Any]) -> FileRules:
    """The rules a recorded root was read with (the defaults where none were recorded)."""
    rules = root.get("rules") or {}
    max_mb = rules.get("max_mb", FileRules.max_mb)
    return FileRules(
        tuple(str(pattern) for pattern in rules.get("include", ())),
        tuple(str(pattern) for pattern in rules.get("exclude", ())),
        math.inf if max_mb is None else float(max_mb),  # (null: indexed with no size limit)
    )


def is_file_input(paths: Sequence[str], whole: bool) -> bool:
    """Whether `index PATH...` reads files by their format (folders, Markdown, HTML, PDF; .txt with --whole)
    rather than a corpus file one document per line (.txt) or record (.jsonl, .csv)."""
    from searchengine.reading.formats import CORPUS_FORMATS, format_of

    if len(paths) > 1 or whole:
        return True
    path = Path(paths[0])
    return paths[0] != STDIN and (path.is_dir() or format_of(path) not in (None, *CORPUS_FORMATS))


def recorded_folders(reading: dict[str, Any]) -> list[Path]:
    """The folders and files an index reads (`reading` its record), as absolute paths."""
    files = reading.get("files")
    if not isinstance(files, dict):
        return []
    roots = files.get("roots", [])
    return [absolute_path(Path(root["path"])) for root in roots if isinstance(root, dict) and root.get("path")]


def as_recorded(path: Path, folders: Sequence[Path]) -> Path:
    """`path` (absolute) spelled through the recorded folder that holds it: a folder indexed as `link` (a symlink
    to `notes`) and named now as `notes/x.md` gives `link/x.md`, so its documents keep their ids and sources.
    `path` itself where a folder holds it by name, or none holds it."""
    if any(path == folder or folder in path.parents for folder in folders):
        return path
    try:
        real = path.resolve()
        for folder in folders:
            target = folder.resolve()
            if real == target or target in real.parents:
                return folder / real.relative_to(target)
    except OSError:
        pass
    return path


def inside_folders_read(reading: dict[str, Any], paths: Sequence[Path]) -> bool:
    """Whether every path lies in a folder the index reads by format (`reading` its record): a .txt, .jsonl or
    .csv there must be added as `sync` reads it (ids `path`, `path#LINE`), not as a corpus file, or `sync` adds
    it again."""
    folders = recorded_folders(reading)
    return bool(paths) and all(
        str(path) != STDIN
        and any(_under(str(as_recorded(absolute_path(Path(path)), folders)), folder) for folder in folders)
        for path in paths
    )


def read_paths(
    roots: Sequence[Path],
    rules: FileRules,
    base: Path | None = None,
    known: dict[str, FileFacts] | None = None,
    progress: bool = False,
    report: FileReport | None = None,
    fields: JsonFields = JsonFields(),
    globs_from: Path | None = None,
) -> tuple[list[Document], FileReport]:
    """The documents of the files under `roots` (ids relative to `base`, by default the roots' common folder) and
    what reading them found (added to `report` when given); files in `known` whose facts match are left out as
    unchanged. `fields` name the text, title and id fields of .jsonl and .csv records; the globs of `rules`
    match paths relative to `globs_from` (the folder given them, when `roots` are parts of it), else to each root."""
    from tqdm import tqdm

    report = FileReport() if report is None else report
    base = common_base(roots) if base is None else base
    documents = []
    with tqdm(desc="Reading files", unit=" files", disable=not progress, delay=1.0, leave=False) as bar:
        for document in read_files(roots, base, rules, report, known, fields, globs_from):
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
    files = engine.reading().get("files")
    if not isinstance(files, dict) or not files.get("roots"):
        raise SearchEngineError(
            f"the index in {engine.path} was not built from folders or files, so there is nothing to sync; build "
            "one with `searchengine index FOLDER`"
        )
    base = Path(files["base"])
    fields = recorded_fields(engine.reading()) or JsonFields()
    chosen = _chosen_roots(files["roots"], roots)
    report = SyncReport()
    stored = engine.metadata_by_external_id(FACT_FIELDS)
    ids_of: dict[str, set[str]] = {}
    known: dict[str, FileFacts] = {}
    located: dict[str, str] = {}
    for identifier, (digest, size, mtime_ns, location, path) in stored.items():
        if not isinstance(path, str):
            continue
        ids_of.setdefault(path, set()).add(identifier)
        if isinstance(location, str):
            located[path] = location
        if isinstance(digest, str) and isinstance(size, int) and isinstance(mtime_ns, int):
            known[path] = FileFacts(size, mtime_ns, digest)
    step = time.perf_counter()
    documents: list[Document] = []
    for root, path in chosen:
        if root["kind"] == "file" and not path.exists():
            continue  # a file named when the index was built, deleted since: its documents go below
        found_before = len(report.files.seen)
        folder = absolute_path(Path(root["path"]))  # its globs match inside it, whatever part of it is read
        read, _ = read_paths([path], _rules(root), base, known, progress, report.files, fields, folder)
        documents += read
        under = [shown for shown, location in located.items() if _under(location, path)]
        if len(report.files.seen) == found_before and under and not report.files.seen.intersection(under):
            report.files.skipped.append(
                Skipped(
                    shown_path(path, base),
                    "holds no file to read now (an unmounted disk?); the index keeps its documents: delete them "
                    "with `searchengine delete --external PATH...` if they are gone for good",
                    path,
                )
            )
    report.stages["reading"] = time.perf_counter() - step
    new_ids = ids_read(documents)
    for path in new_ids:
        if path not in report.files.refreshed:
            (report.updated if path in known else report.added).append(path)
    report.removed = sorted(
        path
        for path, location in located.items()
        if path not in report.files.seen
        and any(_under(location, root_path) for _, root_path in chosen)
        and not any(
            skip.keeps and skip.path is not None and _under(location, skip.path) for skip in report.files.skipped
        )
    )
    removed_ids = [identifier for path in report.removed for identifier in sorted(ids_of[path])]
    removed_ids += dropped_ids(new_ids, ids_of)
    if removed_ids:  # first: killed before the add, the changed files still have their old facts, so they are read
        # again next time; killed after the add, the pages and records they lost would never be found again
        step = time.perf_counter()
        engine.delete(external_ids=removed_ids, merge=False)
        report.stages["removing"] = time.perf_counter() - step
    if documents:
        step = time.perf_counter()
        engine.add(documents, progress=progress, merge=False)
        report.stages["adding"] = time.perf_counter() - step
    if documents or removed_ids:
        engine.merge()
    report.seconds = time.perf_counter() - started
    return report


def ids_by_path(engine: SearchEngine) -> dict[str, set[str]]:
    """The ids of the stored documents read from each file, by the file's path (as its documents record it)."""
    ids_of: dict[str, set[str]] = {}
    for identifier, (path,) in engine.metadata_by_external_id(("path",)).items():
        if isinstance(path, str):
            ids_of.setdefault(path, set()).add(identifier)
    return ids_of


def ids_read(documents: Sequence[Document]) -> dict[str, set[str]]:
    """The ids of documents read from files, by the file's path: what each file read again yields now."""
    new_ids: dict[str, set[str]] = {}
    for document in documents:
        if document.external_id is not None and isinstance(document.metadata.get("path"), str):
            new_ids.setdefault(document.metadata["path"], set()).add(document.external_id)
    return new_ids


def dropped_ids(new_ids: dict[str, set[str]], ids_of: dict[str, set[str]]) -> list[str]:
    """The stored ids (`ids_of`, by file path) of the files read again (`new_ids`, from ids_read) that those files
    no longer yield: the pages a PDF lost, the records a .jsonl or .csv lost. Adding the documents replaces the
    rest."""
    return [identifier for path, ids in new_ids.items() for identifier in sorted(ids_of.get(path, set()) - ids)]


def _chosen_roots(recorded: list[dict[str, Any]], asked: Sequence[Path] | None) -> list[tuple[dict[str, Any], Path]]:
    """The recorded roots to sync, each with the path to read: all of them, or the ones `asked` names (a path
    inside a recorded folder reads that part of it, with the folder's rules). A recorded folder that is gone is
    one error naming the fix."""
    roots = [
        (root, absolute_path(Path(root["path"]))) for root in recorded if isinstance(root, dict) and root.get("path")
    ]
    for root, path in roots:
        if root.get("kind") != "file" and not path.exists() and not asked:
            raise SearchEngineError(
                f"{path} no longer exists; if it moved, build the index again from its new place with "
                "`searchengine index NEW_PLACE --replace`, or sync the other folders by naming them"
            )
    if not asked:
        return roots
    chosen = []
    for path in (as_recorded(absolute_path(Path(name)), [folder for _, folder in roots]) for name in asked):
        owner = next((root for root, folder in roots if path == folder or folder in path.parents), None)
        if owner is None:
            gone = [str(folder) for _, folder in roots if not folder.exists()]
            fix = (  # `add` would keep the moved folder's old documents beside its new ones
                f"if {' or '.join(gone)} moved there, build the index again from it with `searchengine index {path} "
                f"--replace`; else add it with `searchengine add {path}`"
                if gone
                else f"add it with `searchengine add {path}`"
            )
            raise SearchEngineError(
                f"{path} is not one of the folders this index reads ({', '.join(str(f) for _, f in roots)}); {fix}"
            )
        chosen.append((owner, path))
    return chosen


def _under(location: object, path: Path) -> bool:
    """Whether a stored document's file (`location`, its absolute path) is `path` or lies under it."""
    if not isinstance(location, str):
        return False
    file = Path(location)
    return file == path or path in file.parents


@dataclass(frozen=True)
class ExistingIndex:
    """What an index directory already holds, as far as replacing it is concerned."""

    documents: int
    sources: list[str]


def existing_index(path: Path) -> ExistingIndex | None:
    """The index already in `path` (None where there is none), read without loading its model."""
    from searchengine.indexer.commit.index_directory import IndexDirectory
    from searchengine.indexer.tables.store import DocumentStore

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
    again is a rebuild, building from another one would silently discard what the index holds. With `replace` the
    index there is not read at all: one that is damaged, or of a newer format, is what a rebuild over it is for
    (every such error says to rebuild, and `index --replace` refused with that same error)."""
    if replace:
        return
    try:
        existing = existing_index(path)
    except SearchEngineError as exc:
        raise SearchEngineError(
            f"{path} holds an index that cannot be read, kept until you say to replace it ({exc}); pass --replace to "
            "build over it, or --index-dir DIR to build another"
        ) from None
    if existing is None or existing.documents == 0:
        return
    names = [source_name(source) for source in sources]
    if existing.sources and names == existing.sources and STDIN not in names:
        return
    was = ", ".join(existing.sources) if existing.sources else "an input this version did not record"
    raise SearchEngineError(
        f"{path} already holds an index of {existing.documents:,} documents from {was}; pass --replace to replace "
        "it, --append to add to it, or --index-dir DIR to build another"
    )
