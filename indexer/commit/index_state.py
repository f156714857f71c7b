"""What a format-2 index holds, read from its store: the manifest (which says only what a rebuild changes) filled
in with the counts, the last update, the library versions and the live segments of the latest commit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from searchengine.indexer.commit.manifest import (
    ORIGINALS_ROLE,
    SEGMENT_ROLE,
    TEMPLATE_ROLE,
    Counts,
    Manifest,
    StoredFile,
)
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.segments import SegmentRecord


def with_store_state(directory: Path, manifest: Manifest) -> Manifest:
    """`manifest` (format 2) with what its store's latest commit says: counts taken from the data, update time,
    versions, and each live segment as a file (`segment.<n>`, with its size and checksum; its originals file as
    `segment.<n>.originals`; the trained template as `segment.template`)."""
    stored = manifest.files["documents"]
    store = DocumentStore(directory / stored.name)
    try:
        store.read_snapshot()
        return state_of(store, manifest)
    finally:
        store.close()


def state_of(store: DocumentStore, manifest: Manifest, records: list[SegmentRecord] | None = None) -> Manifest:
    """`with_store_state` through an open store, in its current read snapshot; `records`: its segment records, where
    the caller read them in the same snapshot already."""
    state = store.segments.state()
    segments = {}
    for number, record in enumerate(store.segments.records() if records is None else records):
        segments[f"{SEGMENT_ROLE}.{number}"] = StoredFile(record.name, record.size, record.checksum)
        if record.originals is not None:
            originals = record.originals
            segments[f"{SEGMENT_ROLE}.{number}.{ORIGINALS_ROLE}"] = StoredFile(
                originals.name, originals.size, originals.checksum
            )
    template = store.segments.template()
    if template is not None:
        segments[f"{SEGMENT_ROLE}.{TEMPLATE_ROLE}"] = StoredFile(template.name, template.size, template.checksum)
    documents = store.count()
    counts = Counts(vectors=store.vector_count(), documents=documents, tombstones=len(store.tombstones.ids()))
    files = manifest.own_files
    db = directory_file(store.path)
    files["documents"] = StoredFile(files["documents"].name, db, None, in_place=True)
    return replace(
        manifest,
        count=counts,
        updated_at=state.get("updated_at", manifest.created_at),
        versions={**manifest.versions, **json.loads(state.get("versions", "{}"))},
        files={**files, **segments},
    )


def directory_file(path: Path) -> int:
    """Bytes the store takes on disk: its file and its write-ahead log."""
    total = 0
    for name in (path, Path(f"{path}-wal")):
        try:
            total += name.stat().st_size
        except OSError:
            pass
    return total
