"""`searchengine info`, `delete`, `compact` and `verify`: inspect an index, remove documents, check its files."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import IndexDirOption, json_option
from searchengine.engine.document_ids import document_id
from searchengine.engine.wording import counted
from searchengine.errors import SearchEngineError
from searchengine.reading.file_rules import DEFAULT_MAX_MB

if TYPE_CHECKING:  # imported inside the commands, so `--help` stays fast
    from searchengine.engine.index_memory import MemoryUse
    from searchengine.engine.retrain_advice import TemplateState
    from searchengine.indexer.commit.index_directory import IndexDirectory
    from searchengine.indexer.commit.manifest import Manifest
    from searchengine.indexer.tables.store import ClusteringRecord


def info(
    index_dir: Path | None = IndexDirOption,
    as_json: bool = json_option("Print as JSON."),
) -> None:
    """Show what an index holds: counts, model, pooling, dimension, whitening, index type, size, dates.

    Example:

      searchengine info --index-dir ~/indexes/docs
    """
    from searchengine.engine.search_engine import default_index_dir
    from searchengine.indexer.commit.index_directory import IndexDirectory

    target = index_dir or default_index_dir()
    with user_errors(target):
        directory = IndexDirectory(target)
        # Read the store of the manifest just read, again from the top if a writer swaps generations meanwhile.
        manifest, (clustering, duplicates, repeats, keyword_index, reading, memory, template) = directory.read_consistently(
            lambda current: (current, _store_summary(directory, current))
        )
        model, whitening = manifest.model, manifest.whitening
        details = {
            "path": str(target),
            "documents": _documents_summary(manifest, repeats),
            "built from": _reading_summary(reading),
            "vectors": _vectors_summary(manifest),
            "model": f"{model.name} (fingerprint {model.fingerprint})",
            "pooling": model.pooling
            + (f" {model.prompt.template!r}" if model.prompt else "")
            + (" (denoised)" if model.prompt and model.prompt.denoise else "")
            + "".join(f" + {transform}" for transform in model.transforms)
            + (" + normalize" if model.normalize else ""),
            "dimension": manifest.index.dimension,
            "whitening": (
                f"whitening-k {whitening.k} (fitted on {counted(whitening.fit_count, 'distinct text')})"
                if whitening
                else "none"
            ),
            "index type": f"{manifest.index.type} (FAISS, inner product)"
            + (f", in {manifest.index.shards} shards searched together" if manifest.index.shards > 1 else "")
            + (_segments_summary(manifest) if manifest.segmented else ""),
            **({"trained template": template.summary()} if template is not None else {}),
            "keyword index": (
                "FTS5, BM25 with Porter stemming (keyword and hybrid search)"
                if keyword_index
                else f"none (written before keyword search): `searchengine compact -d {target}` adds it"
            ),
            "deleted, not compacted": _tombstone_summary(manifest),
            "clustering": _clustering_summary(clustering),
            "near-duplicates": _duplicates_summary(duplicates),
            "memory": _memory_summary(memory),
            "size on disk": _human_bytes(manifest.size_on_disk),
            "built": manifest.created_at,
            "updated": manifest.updated_at,
            "versions": ", ".join(f"{name} {v}" for name, v in manifest.versions.items()),
        }
        if as_json:
            extra = {
                "clustering": asdict(clustering) if clustering else None,
                "duplicates": duplicates,
                "repeats": repeats,
                "keyword_index": keyword_index,
                "reading": reading,
                "memory": memory.as_json(),
                "template": None if template is None else template.as_json(),
            }
            state = manifest.state_json() if manifest.segmented else {}
            typer.echo(json.dumps({**manifest.as_json_dict(), **state, **extra}, indent=2))
            return
        width = max(len(key) for key in details)
        for key, value in details.items():
            typer.echo(f"{key + ':':<{width + 1}} {value}")


def _store_summary(
    directory: IndexDirectory, manifest: Manifest
) -> tuple[ClusteringRecord | None, int, int, bool, dict, MemoryUse, TemplateState | None]:
    """From the index's document store: the stored clustering (or None), how many documents `mine --dedupe`
    marked as near-duplicates, how many documents repeat an earlier one's exact text, whether it holds the
    keyword index, how it reads its input (searchengine.engine.files), the memory each part takes, and its
    trained template's fit (None: it has none)."""
    from searchengine.engine.index_memory import memory_use
    from searchengine.engine.indexing import READING
    from searchengine.engine.retrain_advice import template_state
    from searchengine.indexer.tables.store import DocumentStore
    from searchengine.indexer.vectors.index_choice import MEMORY_BUDGET, type_for_growth

    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        reading = store.settings.get(READING)
        return (
            store.clustering.record(),
            len(store.duplicates.marks()),
            store.documents.repeats(),
            store.keyword.exists(),
            reading if isinstance(reading, dict) else {},
            memory_use(directory.path, manifest, store),
            template_state(
                store.segments.template() if manifest.segmented else None,
                manifest.count.vectors,
                type_for_growth(
                    manifest.index.type, manifest.count.vectors, manifest.index.dimension,
                    store.settings.get(MEMORY_BUDGET),
                ),
            ),
        )
    finally:
        store.close()


def _root_summary(root: dict) -> str:
    """One folder or file an index reads, with the globs it is read with: "notes (include '*.md')"."""
    rules = root.get("rules") if isinstance(root.get("rules"), dict) else {}
    globs = [f"include {pattern!r}" for pattern in rules.get("include", [])]
    globs += [f"exclude {pattern!r}" for pattern in rules.get("exclude", [])]
    max_mb = rules.get("max_mb", DEFAULT_MAX_MB)
    if max_mb is None:
        globs.append("files of any size")
    elif max_mb != DEFAULT_MAX_MB:
        globs.append(f"files up to {max_mb:g} MB")
    return f"{root.get('path')}" + (f" ({', '.join(globs)})" if globs else "")


def _reading_summary(reading: dict) -> str:
    """What the index was built from, as `add` and `sync` read it: its folders and their rules, or its corpus
    file and JSON fields."""
    fields = reading.get("fields") or {}
    named = [f"{role} field {fields[role]!r}" for role in ("title", "id") if fields.get(role)]
    if fields.get("text", "text") != "text":
        named.insert(0, f"text field {fields['text']!r}")
    files = reading.get("files")
    if isinstance(files, dict) and files.get("roots"):
        roots = [_root_summary(root) for root in files["roots"] if isinstance(root, dict)]
        records = f"; records' {', '.join(named)}" if named else ""
        return f"{', '.join(roots)} (files read by format{records}; `sync` re-reads them)"
    sources = reading.get("sources") or []
    if not sources:
        return "not recorded (texts given in Python, or an index written before this was recorded)"
    return ", ".join(sources) + (f" ({', '.join(named)})" if named else "")


def _documents_summary(manifest: Manifest, repeats: int) -> str:
    documents = manifest.count.documents
    if not repeats:
        return counted(documents, "document")
    verb = "repeats" if repeats == 1 else "repeat"
    return f"{counted(documents, 'document')}, of which {repeats:,} {verb} an earlier document's exact text"


def _vectors_summary(manifest: Manifest) -> str:
    searchable = f"{counted(manifest.count.vectors, 'vector')} searchable"
    if manifest.passages is not None:
        return (
            f"{searchable}: one per passage of a document longer than the model's {manifest.passages.tokens} "
            f"tokens (consecutive passages share up to {manifest.passages.overlap} tokens), one per other document"
            + ("; each passage embedded after its heading" if manifest.passages.headings else "")
        )
    if manifest.count.vectors == manifest.count.documents:
        return f"{searchable}, one per document"
    return f"{searchable} (this index was written by an older version: one per distinct text until its next write)"


def _memory_summary(memory: MemoryUse) -> str:
    """The memory each part takes in a query process, the mapped files' page cache and the store's cache apart."""
    parts = [("codes", memory.codes), ("graph", memory.graph), ("ids", memory.ids), ("tables", memory.fixed)]
    shown = ", ".join(f"{name} {_human_bytes(size)}" for name, size in parts if size)
    return (
        f"{_human_bytes(memory.resident)} to search ({shown or 'nothing'}); mapped files "
        f"{_human_bytes(memory.mapped_files)} on disk"
        + (f" ({_human_bytes(memory.originals)} of them full vectors for rescoring)" if memory.originals else "")
        + f", {_human_bytes(memory.mapped_cached)} of them in the page cache "
        f"now (shared, evictable); store's page cache up to {_human_bytes(memory.store_cache_limit)} a connection "
        f"(store file {_human_bytes(memory.store_file)})"
    )


def _duplicates_summary(count: int) -> str:
    if not count:
        return "none marked (mark them with `searchengine mine --threshold 0.95 --dedupe`)"
    return f"{counted(count, 'document')} marked as near-duplicates of earlier ones (`searchengine mine --dedupe`)"


def _clustering_summary(clustering: ClusteringRecord | None) -> str:
    if clustering is None:
        return "none (make one with `searchengine cluster`)"
    parameters = ", ".join(f"{name}={value}" for name, value in clustering.parameters.items())
    return (
        f"{clustering.method} ({parameters}): {counted(clustering.clusters, 'cluster')} of "
        f"{counted(clustering.documents, 'document')}, "
        f"made {clustering.created_at}"
    )


def _segments_summary(manifest: Manifest) -> str:
    return (
        f", in {counted(len(manifest.vector_segments), 'segment')} searched together (small ones exact; merged as they grow, "
        "`searchengine compact` merges all)"
    )


def _tombstone_summary(manifest: Manifest) -> str:
    pending = manifest.count.tombstones
    if not pending:
        return "none"
    if manifest.segmented:
        return (
            f"{counted(pending, 'vector')} kept as {'a tombstone' if pending == 1 else 'tombstones'} until "
            f"{'its segment merges' if pending == 1 else 'their segments merge'} (never returned); "
            f"`searchengine compact` drops {'it' if pending == 1 else 'them'} now"
        )
    return (
        f"{counted(pending, 'vector')} kept as tombstones ({manifest.index.type} cannot delete in place); "
        "run `searchengine compact`"
    )


def delete(
    ids: list[str] = typer.Argument(..., help="Document ids (as `query` prints them, with or without #)."),
    external: bool = typer.Option(False, "--external", help="The ids are external ids given with --id-field."),
    index_dir: Path | None = IndexDirOption,
) -> None:
    """Delete documents from the index: all of them, or none if any id is unknown.

    Examples:

      searchengine delete 17 42

      searchengine delete --external doc-2024-001
    """
    from searchengine.engine.search_engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with user_errors(target):
        engine = SearchEngine.open(target)
        if external:
            deleted = engine.delete(external_ids=ids)
        else:
            deleted = engine.delete(ids=[document_id(value, "use --external for your own ids") for value in ids])
        typer.echo(f"Deleted {counted(len(deleted), 'document')}; the index holds {counted(len(engine), 'document')}.")
        if len(engine.tombstones):
            one = len(engine.tombstones) == 1
            typer.echo(
                f"{counted(len(engine.tombstones), 'vector')} {'stays' if one else 'stay'} as "
                f"{'a tombstone' if one else 'tombstones'} until {'its segment merges' if one else 'their segments merge'}"
                f"; {'it is' if one else 'they are'} never returned. `searchengine compact` reclaims the space now."
            )


def compact(
    index_dir: Path | None = IndexDirOption,
    retrain: bool = typer.Option(
        False,
        "--retrain",
        help="Also train the index's quantizer (its template: IVF lists, PQ or SQ codebooks) again on the vectors it "
        "holds now, and re-encode every segment with it, in one commit (searches go on meanwhile). Worth it when "
        "`info` says so (for PQ types, once the vectors added since training decode clearly worse than the training "
        "vectors did; docs/memory.md#when-to-retrain measures where).",
    ),
) -> None:
    """Merge the index's vector segments into one, without the vectors of deleted documents (tombstones), and give
    an index written before keyword search its keyword index (for `query --mode keyword` and `--mode hybrid`).

    An index of a trained type (IVF, PQ, SQ8) encodes every write and merge with the quantizer its build trained,
    never training again; `--retrain` trains it again on the current data, for the type its size (and memory
    budget) calls for. Without it, compact says when the data added since training has drifted enough to be
    worth it.

    Example:

      searchengine compact --index-dir ~/indexes/docs

      searchengine compact --retrain --index-dir ~/indexes/docs
    """
    from searchengine.engine.retrain_advice import template_state
    from searchengine.engine.search_engine import SearchEngine, default_index_dir
    from searchengine.indexer.commit.index_directory import IndexDirectory
    from searchengine.indexer.tables.store import DocumentStore

    target = index_dir or default_index_dir()
    with user_errors(target):
        engine = SearchEngine.open(target)
        had_keyword_index = engine.has_keyword_index
        dropped = engine.compact(retrain)
        if not had_keyword_index:
            typer.echo(
                f"Added the keyword index ({counted(len(engine), 'document')}): keyword and hybrid search work now."
            )
        if dropped or had_keyword_index:
            typer.echo(
                f"Dropped {counted(dropped, 'deleted vector')}."
                if dropped
                else "Nothing to compact: no deleted vectors."
            )
        directory = IndexDirectory(target)
        store = DocumentStore(directory.file(directory.read_settings(), "documents"))
        try:
            store.read_snapshot()
            state = template_state(store.segments.template(), store.vector_count())
        finally:
            store.close()
        if retrain and state is not None:
            typer.echo(f"Retrained: {state.factory} on {state.trained_vectors:,} vectors; every segment re-encoded.")
        elif state is not None and state.retrain_advised:
            typer.echo(f"Trained template: {state.summary()}.")


def filter_index(
    fields: list[str] = typer.Argument(..., help="Metadata fields that queries filter on.", metavar="FIELD"),
    index_dir: Path | None = IndexDirOption,
    drop: bool = typer.Option(False, "--drop", help="Drop the indexes on these fields instead."),
) -> None:
    """Index metadata fields that queries filter on (--where), so a filter on one reads only the documents it
    matches instead of every document: worth it from about a million documents (docs/benchmarks.md, the store at
    10 million rows). Later additions keep the indexes up to date; each costs some space and write time.

    Examples:

      searchengine filter-index year lang --index-dir ~/indexes/docs

      searchengine filter-index lang --drop
    """
    from searchengine.engine.search_engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with user_errors(target):
        engine = SearchEngine.open(target)
        changed = engine.index_fields(fields, drop=drop)
        done = "Dropped the index on" if drop else "Indexed"
        if changed:
            typer.echo(f"{done} {', '.join(changed)}.")
        unchanged = [field for field in dict.fromkeys(fields) if field not in changed]
        if unchanged:
            typer.echo(f"{'Not indexed' if drop else 'Already indexed'}: {', '.join(unchanged)}.")
        indexed = engine.indexed_fields()
        typer.echo(f"Indexed fields: {', '.join(indexed) if indexed else 'none'}.")


def verify(index_dir: Path | None = IndexDirOption) -> None:
    """Check every file of an index against the size and sha256 checksum its manifest records.

    Prints each file as OK or what is wrong with it; exits 1 if any file is damaged. Opening an index checks the
    checksums of files up to 8 MiB; this reads every file whole, whatever its size.

    Example:

      searchengine verify --index-dir ~/indexes/docs
    """
    from searchengine.engine.search_engine import default_index_dir
    from searchengine.indexer.commit.index_directory import IndexDirectory

    target = index_dir or default_index_dir()
    with user_errors(target):
        checks = IndexDirectory(target).verify()
        for check in checks:
            if check.problem:
                typer.echo(f"FAILED  {check.role:<10} {check.name}: {check.problem}")
            elif check.checked:
                typer.echo(f"OK      {check.role:<10} {check.name} ({check.checked})")
            elif check.has_checksum:
                typer.echo(f"OK      {check.role:<10} {check.name} (size and sha256 match the manifest)")
            else:
                typer.echo(
                    f"OK      {check.role:<10} {check.name} (size matches; no checksum recorded by the "
                    "version that wrote it: the next write records one)"
                )
        damaged = [check for check in checks if check.problem and not check.unreadable]
        unreadable = [check for check in checks if check.unreadable]
        parts = []
        if unreadable:
            parts.append(
                f"{counted(len(unreadable), 'file')} of the index at {target} may not be read by this user, so "
                f"verify cannot tell whether {'it is' if len(unreadable) == 1 else 'they are'} intact: check "
                "the permissions of the files and the directory, or run verify as their owner"
            )
        if damaged:
            parts.append(
                f"{counted(len(damaged), 'file')} of the index at {target} "
                f"{'is' if len(damaged) == 1 else 'are'} damaged; rebuild the index from its corpus"
            )
        if parts:
            raise SearchEngineError("; and ".join(parts))


def _human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{size} B"
        value /= 1024
    raise AssertionError("unreachable")
