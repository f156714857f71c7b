"""The SQLite document store (through sqlite-utils for a writer, store_connection.ReadDatabase for a reader): the
one connection and transaction that every table of an index's store is read and written through, and the writes
that span tables.

Each table's SQL is its own module: documents (document_table.py), the keyword index (keyword_table.py),
passages (passages.py), tombstones (tombstone_table.py), segments and the commit state (segment_table.py),
clustering (clustering_table.py), near-duplicate marks (duplicates_table.py), build settings
(settings_table.py), and filters over documents (indexer/query/document_filters.py). Stores of every older shape
are read and brought to the current one by the upgrade chain (indexer/upgrades/chain.py).

`DocumentStore` opens the connection, owns the write's transaction (`begin`, `commit`, `rollback`) and the
reader's snapshot (`read_snapshot`), and does what spans tables: an add or delete (documents and their
passages), the id sequence (documents, passages, tombstones and the commit state), and the vector counts."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from searchengine.indexer.errors import IndexerError, InterruptedAfterCommit, UnknownDocumentError
from searchengine.indexer.query.document_filters import DocumentFilters
from searchengine.indexer.tables.clustering_table import ClusteringRecord, ClusteringTable
from searchengine.indexer.tables.document_table import TABLE, DocumentTable
from searchengine.indexer.tables.documents import Document, StoredDocument, lone_surrogate, refuse_unstorable
from searchengine.indexer.tables.duplicates_table import DuplicatesTable
from searchengine.indexer.tables.field_indexes import FieldIndexes
from searchengine.indexer.tables.keyword_table import KeywordTable
from searchengine.indexer.tables.passages import PassageTable
from searchengine.indexer.tables.segment_table import SegmentTable
from searchengine.indexer.tables.settings_table import SettingsTable
from searchengine.indexer.tables.store_connection import ReadDatabase, StoreGuard, connect
from searchengine.indexer.tables.tombstone_table import TombstoneTable
from searchengine.indexer.tables.upsert import StoreChange, plan_upsert
from searchengine.indexer.tables.wal_upkeep import truncate_log
from searchengine.indexer.upgrades.legacy_store import upgrade as upgrade_legacy
from searchengine.indexer.upgrades.store_steps import open_store, upgrade_schema

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["ClusteringRecord", "Document", "DocumentStore", "StoreChange", "StoredDocument", "lone_surrogate"]
"""What callers take from here: the store, what it takes in and gives back (defined in their tables' modules)."""


class DocumentStore:
    """Documents by id, one row each, and every other table of an index's store. Opened read-only unless
    `writable`; a read-only store caches counts and filters per read snapshot."""

    def __init__(self, path: Path, writable: bool = False) -> None:
        self.path = path
        self.writable = writable
        self.closed = False
        self._guard = StoreGuard(Path(path))
        self.legacy = False
        """True for a store in the shape older versions wrote (read through a view until `upgrade`)."""
        try:
            self.db = _database(connect(Path(path), writable), writable)
            cached = not writable
            self.documents = DocumentTable(self.db, self._guard, cached)
            self.keyword = KeywordTable(self.db, self._guard, Path(path), self.documents.count, cached)
            """BM25 search over the documents' text (FTS5)."""
            self.passages = PassageTable(self.db, self._guard)
            """Which vectors are passages of which document (documents split into passages)."""
            self.tombstones = TombstoneTable(self.db, self._guard)
            """Vector ids of deleted documents still inside some segment."""
            self.filters = DocumentFilters(self.db, self._guard, self.passages, cached)
            self.field_indexes = FieldIndexes(self.db, self._guard)
            """Indexes on metadata fields that filters seek instead of reading every document."""
            self.segments = SegmentTable(self.db, self._guard)
            """The live vector segments and the commit state (format 2)."""
            self.settings = SettingsTable(self.db, self._guard)
            """How the index reads its input: fields, folders and their rules."""
            self.clustering = ClusteringTable(self.db, self._guard)
            self.duplicates = DuplicatesTable(self.db, self._guard)
            """Near-duplicates marked by `searchengine mine --dedupe`."""
            with self._guard():
                if not writable and TABLE not in self.db.table_names():
                    raise IndexerError(f"document store {self.path} has no documents table; rebuild the index")
                self.legacy = open_store(self.db, writable)
                """True while an older store waits for one row per document (read through a view until then)."""
        except sqlite3.Error as exc:
            raise self._guard.corrupt(exc) from None

    def begin(self) -> None:
        """Start the one transaction of a write in place (BEGIN IMMEDIATE: the writer's lock on the file); every
        change until `commit` is part of it, and readers see none of them until then."""
        with self._guard():
            self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        """Commit the write's transaction: from here on its changes are the index. Then keep SQLite's log from
        growing on (indexer/tables/wal_upkeep.py)."""
        with self._guard():
            self.db.execute("COMMIT")
        try:
            truncate_log(self.db.conn, self.path)
        except KeyboardInterrupt:
            raise InterruptedAfterCommit from None

    def start_build(self) -> None:
        """Fill this store as a build fills its new one, without the index of text hashes until `finish_build`, which
        the commit that names the store calls (indexer/tables/build_hashes.py says why): only for a store no reader
        opens before then."""
        with self._guard(), self.db.atomic():
            self.documents.start_build()

    def finish_build(self) -> None:
        """Make the index of text hashes again after `start_build`, inside the caller's transaction (the commit);
        a no-op for a store not filled so."""
        with self._guard():
            self.documents.finish_build()

    def rollback(self) -> None:
        """Undo the write's transaction, if one is open (a failed or interrupted write changes nothing)."""
        if self.db.conn.in_transaction:
            with self._guard():
                self.db.execute("ROLLBACK")

    def read_snapshot(self) -> None:
        """Start reading a new committed state: end the read transaction held so far and open another, so every
        read until the next call sees one commit, whatever writers commit meanwhile (WAL: readers never wait)."""
        with self._guard():
            if self.db.conn.in_transaction:
                self.db.execute("COMMIT")
            self.db.execute("BEGIN")
            self.db.execute(f"SELECT 1 FROM {TABLE} LIMIT 1").fetchall()
        for table in (self.documents, self.keyword, self.filters):
            table.new_snapshot()

    def schema_version(self) -> int:
        """SQLite's schema cookie as of the current snapshot: it changes whenever a table, index or view of the
        store is made, changed or dropped (an upgrade step, a field index, a keyword index added), so a connection
        can tell that what it read of the store's shape when it opened may be stale."""
        with self._guard():
            return int(self.db.execute("PRAGMA schema_version").fetchone()[0])

    @property
    def holds_snapshot(self) -> bool:
        """Whether a read transaction is open (`read_snapshot`, until `release_snapshot`)."""
        return not self.closed and self.db.conn.in_transaction

    def release_snapshot(self) -> None:
        """End the read transaction held, if any, without opening another: until the next read, this connection
        keeps no part of the write-ahead log from being copied or started again (indexer/tables/wal_upkeep.py)."""
        if self.holds_snapshot:
            with self._guard():
                self.db.execute("COMMIT")

    def reclaim_space(self) -> None:
        """Give the pages of deleted rows back to the file system (SQLite's VACUUM, which rewrites the file through
        its journal: a crash leaves the store as it was or compacted). Readers keep their snapshots meanwhile."""
        with self._guard():
            self.db.execute("VACUUM")

    def upgrade(self) -> list[tuple[int, int]]:
        """Rewrite an older store (one row per distinct text) into one row per document, then migrate it; a no-op
        otherwise. Returns (new id, id whose vector it shares) for each further occurrence of a text the old store
        counted, so the caller adds their vectors (indexer/upgrades/legacy_store.py)."""
        if not self.legacy:
            return []
        with self._guard(), self.db.atomic():
            copies = upgrade_legacy(self.db, self._next_id_after)
        self.legacy = False
        with self._guard():
            upgrade_schema(self.db)  # now in the shape the later steps expect
        return copies

    def _next_id_after(self, table: str) -> int:
        """One more than the largest id in `table` (the documents, or an older store's), the tombstones or the
        passages, and never below the recorded next id: ids are never reused, so a tombstoned vector never answers
        for a new document, and a passage's vector id is no document's."""
        largest = max(self.documents.largest_id(table), self.tombstones.largest_id(), self.passages.largest_id())
        recorded = int(self.segments.state().get("next_id", "0")) if self.segments.exists() else 0
        return max(largest + 1, recorded)

    def next_id(self) -> int:
        """The id the next new document or passage gets: ids are never given twice, even once a merge has dropped
        the tombstones of deleted ones."""
        with self._guard():
            return self._next_id_after(TABLE)

    def count(self) -> int:
        """Number of documents stored."""
        return self.documents.count()

    def get(self, ids: Sequence[int]) -> dict[int, StoredDocument]:
        """The stored documents for `ids` (unknown ids are left out), each with how many documents share its text."""
        return self.documents.get(ids)

    def vector_count(self) -> int:
        """Number of searchable vectors: one per document, plus one per further passage of a split document."""
        return self.documents.count() + self.passages.extra_count()

    def other_vector_ids(self) -> np.ndarray:
        """Vector ids in the vector index that are no live document's own vector: tombstones (deleted documents
        awaiting compaction) and the further passages of split documents. Leaving them out leaves one vector per
        document, a split one's first passage (its title and opening): what clustering and mining compare."""
        return np.union1d(self.tombstones.ids(), self.passages.extra_ids())

    def add(self, documents: Sequence[Document], first_id: int | None = None) -> StoreChange:
        """Store each document as its own row; a document whose external id is stored replaces that one (upsert,
        indexer/tables/upsert.py). An upsert with a new text deletes the old row and its passages (reported in `removed`
        and `removed_vectors`, so the caller drops their vectors). `first_id`: the id of the first document (the
        others follow by position) where the vectors were written under ids given up front (Ray workers); never an
        id given before."""
        refuse_unstorable(documents)
        hashes = [document.content_hash for document in documents]
        with self._guard(), self.db.atomic():
            if self.legacy:
                raise IndexerError(f"document store {self.path} must be upgraded before it is written; rebuild it")
            known = self.documents.known_hashes(hashes)
            stored = self.documents.by_external_id({d.external_id for d in documents if d.external_id is not None})
            next_id = self._next_id_after(TABLE)
            if first_id is not None and first_id < next_id:
                raise IndexerError(f"ids from {first_id} are given already (the next free id is {next_id})")
            plan = plan_upsert(documents, hashes, stored, next_id if first_id is None else first_id)
            removed_vectors = plan.removed + self._delete_rows(plan.removed)
            self.documents.update_origins(plan.updates)
            self.documents.insert(plan.rows)
        return plan.change(known, removed_vectors)

    def add_passages(self, spans: dict[int, list[tuple[int, int]]]) -> dict[int, list[int]]:
        """Record the passages of documents split into several: document id -> the (start, end) character spans
        of its passages. The first passage's vector id is the document's own, the others get new ids from the
        sequence. Returns document id -> its passages' vector ids, in span order."""
        vector_ids: dict[int, list[int]] = {}
        rows: list[tuple[int, int, int, int]] = []
        with self._guard(), self.db.atomic():
            next_id = self._next_id_after(TABLE)
            for document, document_spans in spans.items():
                ids = [document, *range(next_id, next_id + len(document_spans) - 1)]
                next_id += len(document_spans) - 1
                vector_ids[document] = ids
                rows.extend((i, document, start, end) for i, (start, end) in zip(ids, document_spans))
            self.passages.insert(rows)
        return vector_ids

    def delete(self, ids: Sequence[int]) -> list[int]:
        """Delete documents by id, all or none: an id that is not stored raises UnknownDocumentError. Returns the
        vector ids to drop: the documents' own and those of their further passages."""
        ids = sorted(set(int(i) for i in ids))
        with self._guard(), self.db.atomic():
            present = self.documents.present(ids)
            missing = [i for i in ids if i not in present]
            if missing:
                raise UnknownDocumentError(
                    f"no document with id {', '.join(map(str, missing[:10]))}; nothing was deleted"
                )
            return ids + self._delete_rows(ids)

    def _delete_rows(self, ids: Sequence[int]) -> list[int]:
        """Delete documents and their passages; returns the vector ids of their further passages (none for no ids:
        an add that replaces nothing asks nothing of the tables)."""
        if not ids:
            return []
        self.documents.delete(ids)
        return self.passages.delete_documents(ids)

    def close(self) -> None:
        self.db.conn.close()
        self.closed = True


def _database(connection: sqlite3.Connection, writable: bool) -> sqlite_utils.Database | ReadDatabase:
    """The store's connection as its tables use it: sqlite-utils for a writer, its reading part (ReadDatabase) for a
    reader, which then never imports sqlite-utils (nor the pandas it imports)."""
    if not writable:
        return ReadDatabase(connection)
    import sqlite_utils

    return sqlite_utils.Database(connection)
