"""`searchengine info`, `delete` and `compact`: inspect an index and remove documents from it."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import IndexDirOption
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:  # imported inside the commands, so `--help` stays fast
    from searchengine.indexer.index_directory import IndexDirectory
    from searchengine.indexer.manifest import Manifest
    from searchengine.indexer.store import ClusteringRecord


def info(
    index_dir: Optional[Path] = IndexDirOption,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show what an index holds: counts, model, pooling, dimension, whitening, index type, size, dates.

    Example:

      searchengine info --index-dir ~/indexes/docs
    """
    from searchengine.engine.search_engine import default_index_dir
    from searchengine.indexer.index_directory import IndexDirectory

    target = index_dir or default_index_dir()
    with user_errors(target):
        directory = IndexDirectory(target)
        manifest = directory.read_manifest()
        model, whitening = manifest.model, manifest.whitening
        clustering = _stored_clustering(directory, manifest)
        duplicates = _marked_duplicates(directory, manifest)
        details = {
            "path": str(target),
            "documents": manifest.count.documents,
            "distinct texts (vectors)": manifest.count.vectors,
            "model": f"{model.name} (fingerprint {model.fingerprint})",
            "pooling": model.pooling
            + (f" {model.prompt.template!r}" if model.prompt else "")
            + (" (denoised)" if model.prompt and model.prompt.denoise else "")
            + "".join(f" + {transform}" for transform in model.transforms)
            + (" + normalize" if model.normalize else ""),
            "dimension": manifest.index.dimension,
            "whitening": f"whitening-k {whitening.k} (fitted on {whitening.fit_count} texts)" if whitening else "none",
            "index type": f"{manifest.index.type} (FAISS, inner product)",
            "deleted, not compacted": _tombstone_summary(manifest),
            "clustering": _clustering_summary(clustering),
            "near-duplicates": _duplicates_summary(duplicates),
            "size on disk": _human_bytes(manifest.size_on_disk),
            "built": manifest.created_at,
            "updated": manifest.updated_at,
            "versions": ", ".join(f"{name} {v}" for name, v in manifest.versions.items()),
        }
        if as_json:
            extra = {"clustering": asdict(clustering) if clustering else None, "duplicates": duplicates}
            typer.echo(json.dumps({**manifest.as_json_dict(), **extra}, indent=2))
            return
        width = max(len(key) for key in details)
        for key, value in details.items():
            typer.echo(f"{key + ':':<{width + 1}} {value}")


def _stored_clustering(directory: IndexDirectory, manifest: Manifest) -> ClusteringRecord | None:
    """The clustering record kept in the index's document store, or None."""
    from searchengine.indexer.store import DocumentStore

    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        return store.clustering()
    finally:
        store.close()


def _marked_duplicates(directory: IndexDirectory, manifest: Manifest) -> int:
    """How many documents `mine --dedupe` marked as near-duplicates."""
    from searchengine.indexer.store import DocumentStore

    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        return len(store.duplicates())
    finally:
        store.close()


def _duplicates_summary(count: int) -> str:
    if not count:
        return "none marked (mark them with `searchengine mine --threshold 0.95 --dedupe`)"
    return f"{count} texts marked as near-duplicates of earlier ones (`searchengine mine --dedupe`)"


def _clustering_summary(clustering: ClusteringRecord | None) -> str:
    if clustering is None:
        return "none (make one with `searchengine cluster`)"
    parameters = ", ".join(f"{name}={value}" for name, value in clustering.parameters.items())
    return (
        f"{clustering.method} ({parameters}): {clustering.clusters} clusters of {clustering.documents} texts, "
        f"made {clustering.created_at}"
    )


def _tombstone_summary(manifest: Manifest) -> str:
    pending = manifest.count.tombstones
    if not pending:
        return "none"
    return f"{pending} vectors kept as tombstones ({manifest.index.type} cannot delete in place); " \
        "run `searchengine compact`"


def delete(
    ids: list[str] = typer.Argument(..., help="Document ids (as `query` prints them, with or without #)."),
    external: bool = typer.Option(False, "--external", help="The ids are external ids given with --id-field."),
    index_dir: Optional[Path] = IndexDirOption,
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
            deleted = engine.delete(ids=[_document_id(value) for value in ids])
        typer.echo(f"Deleted {len(deleted)} documents; the index holds {len(engine)}.")
        if len(engine.tombstones):
            typer.echo(
                f"{len(engine.tombstones)} vectors stay as tombstones ({engine.info().index_type} cannot delete in "
                "place); they are never returned. Run `searchengine compact` to reclaim the space."
            )


def _document_id(value: str) -> int:
    try:
        return int(value.removeprefix("#"))
    except ValueError:
        raise SearchEngineError(f"{value!r} is not a document id (a number); use --external for your own ids") from None


def compact(index_dir: Optional[Path] = IndexDirOption) -> None:
    """Rebuild the vector index without the vectors of deleted documents (needed for HNSW and PQ types).

    Example:

      searchengine compact --index-dir ~/indexes/docs
    """
    from searchengine.engine.search_engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with user_errors(target):
        dropped = SearchEngine.open(target).compact()
        typer.echo(f"Dropped {dropped} deleted vectors." if dropped else "Nothing to compact: no deleted vectors.")


def _human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{size} B"
        value /= 1024
    raise AssertionError("unreachable")
