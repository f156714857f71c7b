"""`verify` of a format-2 index beyond checksums: SQLite's own full check of the store (integrity_check), and the segments checked
against the store (each file's vector count and dimension, and every vector accounted for by a document, a
passage or a tombstone)."""

from __future__ import annotations

from pathlib import Path

from searchengine.indexer.commit.file_check import FileCheck
from searchengine.indexer.commit.manifest import Manifest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.counters import KEPT, counted, read_counter
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.segments import load_segment


def check_store(folder: Path, manifest: Manifest) -> list[FileCheck]:
    """One FileCheck for the store's pages and indexes (PRAGMA integrity_check: quick_check's page checks, and every
    index entry against its row, which quick_check skips, so a flipped byte of an index passed it) and one for the
    segments against the store, of the index in `folder`."""
    name = manifest.files["documents"].name
    store = DocumentStore(folder / name)
    try:
        store.read_snapshot()
        pages = store.db.execute("PRAGMA integrity_check").fetchall()
        problem = None if pages == [("ok",)] else f"SQLite finds the store damaged: {pages[0][0]}"
        kept = {name: (read_counter(store.db, name), counted(store.db, name)) for name in KEPT}
        wrong = [
            f"{name} {value} (count(*) says {actual})"
            for name, (value, actual) in kept.items()
            if value is not None and value != actual
        ]
        if problem is None and wrong:
            problem = f"the store's kept counts are wrong: {', '.join(wrong)}"
        records = store.segments.records()
        vectors = sum(record.vectors for record in records)
        return [
            FileCheck(
                "store",
                name,
                True,
                problem,
                "SQLite's integrity_check finds every page and index intact; its counts agree",
            ),
            FileCheck(
                "segments",
                f"{len(records)} segment file{'' if len(records) == 1 else 's'}",
                True,
                _segments_problem(folder, manifest, store),
                f"{vectors} vectors of dimension {manifest.index.dimension}: one per searchable vector and tombstone "
                "in the store",
            ),
        ]
    finally:
        store.close()


def _segments_problem(folder: Path, manifest: Manifest, store: DocumentStore) -> str | None:
    """What disagrees between the segments and the store, or None."""
    total = 0
    for record in store.segments.records():
        try:
            segment = load_segment(folder, record, manifest.index.dimension)
        except IndexerError as exc:
            return str(exc)
        if segment.index.dimension != manifest.index.dimension:
            return (
                f"segment {record.name} holds vectors of dimension {segment.index.dimension}, the index "
                f"{manifest.index.dimension}"
            )
        total += segment.index.count
    expected = store.vector_count() + len(store.tombstones.ids())
    if total != expected:
        return (
            f"the segments hold {total} vectors, but the store has {store.vector_count()} searchable vectors and "
            f"{len(store.tombstones.ids())} tombstones ({expected})"
        )
    return None
