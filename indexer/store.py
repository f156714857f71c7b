"""The SQLite document store (through sqlite-utils): one row per document, with its own id, external id, origin
and metadata. Identical texts are separate documents; a `hash` column only finds repeats (to count them and to
encode a text once), it never merges them.

Stores written before one-row-per-document (a unique `hash`, a `count` of repeats, an `external_ids` table) are
read through a temporary view that gives them the current shape, and `upgrade` rewrites them into it; every write
path does that inside its rewrite (searchengine.indexer.rewrite).

The store also holds the keyword index (indexer/keyword_table.py), which stores written before it gain when they
are next opened for writing."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils
from searchengine.indexer.clustering_table import ClusteringRecord, ClusteringTable
from searchengine.indexer.counters import read_counter
from searchengine.indexer.document_filters import DocumentFilters
from searchengine.indexer.duplicates_table import DuplicatesTable
from searchengine.indexer.errors import IndexerError, UnknownDocumentError
from searchengine.indexer.keyword_table import KeywordTable, enable_keyword_index
from searchengine.indexer.migrations import migrate
from searchengine.indexer.passages import PassageTable, create_passages_table
from searchengine.indexer.segment_table import SegmentTable
from searchengine.indexer.settings_table import SettingsTable
from searchengine.indexer.sql_chunks import in_chunks
from searchengine.indexer.store_connection import StoreGuard, connect
from searchengine.indexer.tombstone_table import TABLE as TOMBSTONES
from searchengine.indexer.tombstone_table import TombstoneTable, create_tombstones_table

__all__ = ["ClusteringRecord", "Document", "DocumentStore", "StoreChange", "StoredDocument", "lone_surrogate"]
"""What callers take from here: the store, and what it takes in and gives back."""

TABLE = "documents"
LEGACY_EXTERNAL_IDS_TABLE = "external_ids"
"""Older stores only: user-given ids -> the (shared) row holding that document's text."""
_LEGACY_VIEW = (
    "CREATE TEMP VIEW {TABLE} AS SELECT d.id AS id, d.text AS text, d.source AS source, d.line AS line, "
    "d.metadata AS metadata, d.hash AS hash, {external_id} AS external_id FROM main.{TABLE} AS d"
)
"""An older store as the current shape, for reading: each row one document, with its first external id."""
_LEGACY_EXTERNAL_ID = f"(SELECT min(e.external_id) FROM main.{LEGACY_EXTERNAL_IDS_TABLE} AS e WHERE e.id = d.id)"


@dataclass(frozen=True)
class Document:
    """A text to index, with its origin and any metadata that came with it."""

    text: str
    source: str | None = None
    line: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    external_id: str | None = None
    """A user-given id: adding a document with an id already stored replaces that document (upsert)."""
    blocks: tuple[int, ...] = ()
    """Where each block (paragraph, list item, code block) of a document read from a file starts: a passage may
    begin at any of them. Used when splitting into passages, not stored."""
    section_starts: tuple[int, ...] = ()
    """Where each heading's section or page starts: a passage never runs across one. Not stored."""

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def lone_surrogate(value: object) -> int | None:
    """The code point of the first lone surrogate in `value` (a str, or JSON data holding strings): half of a
    character, from a JSON escape such as "\\ud800" or a byte Python kept as a surrogate escape, which neither
    UTF-8 nor SQLite can hold. None where there is none. Raises RecursionError on JSON nested too deeply."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if text.isascii():  # O(1) in CPython: the common ASCII text costs nothing more
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return ord(text[exc.start])
    return None


def _metadata_json(metadata: dict[str, Any], number: int) -> str:
    """The metadata as stored, refusing NaN and Infinity, which JSON has no numbers for: stored, they would break
    every later filter. Every write path (command line, Python, the server) comes through here."""
    try:
        return json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise IndexerError(
            f"document {number} holds NaN or Infinity in its metadata, which JSON cannot hold and a filter cannot "
            "compare; send null or a string instead"
        ) from None


def _refuse_lone_surrogates(documents: Sequence[Document]) -> None:
    """Refuse, before anything is written, a document whose text, id or metadata holds a lone surrogate."""
    for number, document in enumerate(documents, start=1):
        parts = (document.text, document.external_id or "", document.metadata or "")
        code = next((code for code in map(lone_surrogate, parts) if code is not None), None)
        if code is not None:
            raise IndexerError(
                f"document {number} holds a lone surrogate (\\u{code:04x}), half of a character, in its text, id or "
                "metadata; send valid Unicode"
            )


@dataclass(frozen=True)
class StoredDocument:
    """A document of the store: `count` is how many stored documents hold the same text (1 when unique)."""

    id: int
    text: str
    source: str | None
    line: int | None
    metadata: dict[str, Any]
    count: int
    external_id: str | None = None


@dataclass(frozen=True)
class StoreChange:
    """What `DocumentStore.add` did: rows to embed, and rows whose vectors must go."""

    ids: list[int]
    """Ids of the new rows, one per added document (upserts that left the text as it was add none)."""
    positions: list[int]
    """For each new row, the position of its document in the input."""
    removed: list[int]
    """Rows an upsert gave a new text: deleted from the store, their vectors to be dropped."""
    removed_vectors: list[int] = field(default_factory=list)
    """The vector ids of the `removed` rows: their own ids and those of their further passages."""
    repeated: list[bool] = field(default_factory=list)
    """For each new row, whether an earlier document (stored, or earlier in the input) already has its text."""
    updated: int = 0
    """Upserts that kept the stored text and replaced only its origin and metadata (the vector stays)."""
    superseded: int = 0
    """Documents of the input that a later one with the same id, in the same input, replaced before they were
    stored (ids are text: 1 and "1" are one id)."""

    def __iter__(self) -> Iterator[list[int]]:
        return iter((self.ids, self.positions, self.removed))


class DocumentStore:
    """Documents by id, one row each. Opened read-only unless `writable`."""

    def __init__(self, path: Path, writable: bool = False) -> None:
        self.path = path
        self.writable = writable
        self._guard = StoreGuard(Path(path))
        self._read_only_count: int | None = None
        self.legacy = False
        """True for a store in the shape older versions wrote (read through a view until `upgrade`)."""
        self.passages: PassageTable
        """Which vectors are passages of which document (documents split into passages; indexer/passages.py)."""
        try:
            self.db = sqlite_utils.Database(connect(Path(path), writable))
            self.passages = PassageTable(self.db, self._guard)
            self.keyword = KeywordTable(self.db, self._guard, Path(path), self.count, not writable)
            """BM25 search over the documents' text (indexer/keyword_table.py)."""
            self.filters = DocumentFilters(self.db, self._guard, self.passages, not writable)
            """Which documents meet conditions on their fields (indexer/document_filters.py)."""
            self.segments = SegmentTable(self.db, self._guard)
            """The live vector segments and the commit state (format 2; indexer/segment_table.py)."""
            self.settings = SettingsTable(self.db, self._guard)
            """How the index reads its input: fields, folders and their rules (indexer/settings_table.py)."""
            self.tombstones = TombstoneTable(self.db, self._guard)
            """Vector ids of deleted documents still inside some segment (indexer/tombstone_table.py)."""
            self.clustering = ClusteringTable(self.db, self._guard)
            """The stored clustering (indexer/clustering_table.py)."""
            self.duplicates = DuplicatesTable(self.db, self._guard)
            """Near-duplicates marked by `searchengine mine --dedupe` (indexer/duplicates_table.py)."""
            with self._guard():
                self._create_table_if_missing(writable)
                self.legacy = "count" in self.db[TABLE].columns_dict
                if self.legacy:
                    has_ids = LEGACY_EXTERNAL_IDS_TABLE in self.db.table_names()
                    external_id = _LEGACY_EXTERNAL_ID if has_ids else "NULL"
                    self.db.execute(_LEGACY_VIEW.format(external_id=external_id, TABLE=TABLE))
                elif writable and not self.keyword.exists():
                    enable_keyword_index(self.db)
                if writable and not self.legacy:  # a legacy store is migrated once `upgrade` gave it its shape
                    migrate(self.db)
        except sqlite3.Error as exc:
            raise self._guard.corrupt(exc) from None

    def _create_table_if_missing(self, writable: bool) -> None:
        tables = set(self.db.table_names())
        if TABLE in tables and not writable:
            return
        if not writable:
            raise IndexerError(f"document store {self.path} has no documents table; rebuild the index")
        if TABLE not in tables:
            _create_documents_table(self.db, TABLE)
        create_tombstones_table(self.db)
        create_passages_table(self.db)

    def begin(self) -> None:
        """Start the one transaction of a write in place (BEGIN IMMEDIATE: the writer's lock on the file); every
        change until `commit` is part of it, and readers see none of them until then."""
        with self._guard():
            self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        """Commit the write's transaction: from here on its changes are the index."""
        with self._guard():
            self.db.execute("COMMIT")

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
        self._read_only_count = None
        self.keyword.new_snapshot()
        self.filters.new_snapshot()

    def reclaim_space(self) -> None:
        """Give the pages of deleted rows back to the file system (SQLite's VACUUM, which rewrites the file through
        its journal: a crash leaves the store as it was or compacted). Readers keep their snapshots meanwhile."""
        with self._guard():
            self.db.execute("VACUUM")

    def upgrade(self) -> list[tuple[int, int]]:
        """Rewrite an older store (one row per distinct text) into one row per document; a no-op otherwise.

        Each old row keeps its id and its first external id. Every further occurrence it counted becomes a
        document of its own with a new id (its other external ids in turn; origin and metadata those of the first
        occurrence, the only ones older versions kept; line unknown). Returns (new id, id whose vector it shares)
        for those, so the caller adds their vectors.
        """
        if not self.legacy:
            return []
        with self._guard(), self.db.atomic():
            self.db.execute(f"DROP VIEW temp.{TABLE}")
            old = f"{TABLE}_before_upgrade"
            self.db.execute(f"ALTER TABLE main.{TABLE} RENAME TO {old}")
            _create_documents_table(self.db, TABLE)
            external: dict[int, list[str]] = {}
            if LEGACY_EXTERNAL_IDS_TABLE in self.db.table_names():
                for external_id, row_id in self.db.execute(
                    f"SELECT external_id, id FROM {LEGACY_EXTERNAL_IDS_TABLE} ORDER BY external_id"
                ):
                    external.setdefault(row_id, []).append(external_id)
            next_id = self._next_id_after(old)
            copies: list[tuple[int, int]] = []
            rows = self.db.execute(f"SELECT id, text, source, line, metadata, hash, count FROM {old} ORDER BY id")
            for row_id, text, source, line, metadata, digest, count in rows.fetchall():
                names = external.get(row_id, [])
                occurrences = max(int(count or 1), len(names), 1)
                for occurrence in range(occurrences):
                    new_id = row_id if occurrence == 0 else next_id + len(copies)
                    self.db.execute(
                        f"INSERT INTO {TABLE} (id, external_id, text, source, line, metadata, hash) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            new_id,
                            names[occurrence] if occurrence < len(names) else None,
                            text,
                            source,
                            line if occurrence == 0 else None,
                            metadata,
                            digest,
                        ),
                    )
                    if occurrence:
                        copies.append((new_id, row_id))
            self.db.execute(f"DROP TABLE {old}")
            self.db.execute(f"DROP TABLE IF EXISTS {LEGACY_EXTERNAL_IDS_TABLE}")
        self.legacy = False
        with self._guard():
            migrate(self.db)  # now in the shape the migrations expect
        return copies

    def _next_id_after(self, table: str) -> int:
        """One more than the largest id in `table`, the tombstones or the passages: ids are never reused, so a
        tombstoned vector never answers for a new document, and a passage's vector id is no document's."""
        largest = [
            int(self.db.execute(f"SELECT coalesce(max(id), -1) FROM {name}").fetchone()[0])
            for name in (table, TOMBSTONES)
        ]
        recorded = int(self.segments.state().get("next_id", "0")) if self.segments.exists() else 0
        return max(max(*largest, self.passages.largest_id()) + 1, recorded)

    def next_id(self) -> int:
        """The id the next new document or passage gets: ids are never given twice, even once a merge has dropped
        the tombstones of deleted ones."""
        with self._guard():
            return self._next_id_after(TABLE)

    def count(self) -> int:
        """Number of documents stored. Counted once per read snapshot by a read-only store (`read_snapshot`),
        since SQLite counts by reading the whole table."""
        if self._read_only_count is not None:
            return self._read_only_count
        with self._guard():
            count = read_counter(self.db, "documents")
            if count is None:  # a store written before the counters
                count = int(self.db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])
        if not self.writable:
            self._read_only_count = count
        return count

    def vector_count(self) -> int:
        """Number of searchable vectors: one per document, plus one per further passage of a split document."""
        return self.count() + self.passages.extra_count()

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

    def external_ids(self) -> list[str]:
        """Every stored external id (documents added without one are left out), in id order."""
        with self._guard():
            rows = self.db.execute(f"SELECT external_id FROM {TABLE} WHERE external_id IS NOT NULL ORDER BY id")
            return [row[0] for row in rows]

    def metadata_of_external_ids(self, fields: Sequence[str]) -> dict[str, list[Any]]:
        """For every document that has an external id and the first of `fields` in its metadata, the values of
        `fields` (None where missing), by external id: what `sync` compares files with, read without loading texts."""
        columns = ", ".join("json_extract(metadata, ?)" for _ in fields)
        paths = [f'$."{name}"' for name in fields]
        with self._guard():
            rows = self.db.execute(
                f"SELECT external_id, {columns} FROM {TABLE} WHERE external_id IS NOT NULL "
                "AND json_extract(metadata, ?) IS NOT NULL",
                [*paths, paths[0]],
            ).fetchall()
        return {row[0]: list(row[1:]) for row in rows}

    def ids(self) -> np.ndarray:
        """Every stored document's id, in order."""
        with self._guard():
            rows = self.db.execute(f"SELECT id FROM {TABLE} ORDER BY id").fetchall()
        return np.array([row[0] for row in rows], dtype=np.int64)

    def repeats(self) -> int:
        """Documents whose text an earlier stored document already has."""
        with self._guard():
            return int(self.db.execute(f"SELECT count(*) - count(DISTINCT hash) FROM {TABLE}").fetchone()[0])

    def add(self, documents: Sequence[Document]) -> StoreChange:
        """Store each document as its own row; a document whose external id is stored replaces that one (upsert).

        An upsert with the stored text keeps the row and its vector and replaces origin and metadata; one with a
        new text deletes the old row (reported in `removed`, so the caller drops its vector) and adds a new one.
        """
        _refuse_lone_surrogates(documents)
        hashes = [document.content_hash for document in documents]
        with self._guard(), self.db.atomic():
            if self.legacy:
                raise IndexerError(f"document store {self.path} must be upgraded before it is written; rebuild it")
            known = {
                row[0]
                for row in in_chunks(self.db, f"SELECT DISTINCT hash FROM {TABLE} WHERE hash IN", sorted(set(hashes)))
            }
            stored = self._rows_by_external_id({d.external_id for d in documents if d.external_id is not None})
            next_id = self._next_id_after(TABLE)
            new_rows: dict[int, dict[str, Any]] = {}
            pending: dict[str, int] = {}  # external id -> its new row in this input
            updates: dict[str, tuple[str | None, int | None, str, str]] = {}  # kept text, new origin and metadata
            removed: list[int] = []
            superseded = 0
            for position, (document, digest) in enumerate(zip(documents, hashes)):
                name = document.external_id
                metadata = _metadata_json(document.metadata, position + 1)
                if name is not None:
                    superseded += name in pending or name in updates
                    if name in pending:
                        del new_rows[pending.pop(name)]  # replaced later in the same input: never stored
                    if name in stored:
                        row_id, stored_hash = stored[name]
                        if stored_hash == digest and row_id not in removed:
                            updates[name] = (document.source, document.line, metadata, name)
                            continue
                        updates.pop(name, None)
                        if row_id not in removed:
                            removed.append(row_id)
                row_id = next_id + position
                new_rows[row_id] = {
                    "id": row_id,
                    "external_id": name,
                    "text": document.text,
                    "source": document.source,
                    "line": document.line,
                    "metadata": metadata,
                    "hash": digest,
                    "position": position,
                }
                if name is not None:
                    pending[name] = row_id
            removed_vectors = removed + self._delete_rows(removed)
            self.db.conn.executemany(
                f"UPDATE {TABLE} SET source = ?, line = ?, metadata = ? WHERE external_id = ?", updates.values()
            )
            self.db[TABLE].insert_all(
                ({key: value for key, value in row.items() if key != "position"} for row in new_rows.values()),
                batch_size=1000,
            )
        rows, seen, repeated = list(new_rows.values()), set(known), []
        for row in rows:
            repeated.append(row["hash"] in seen)
            seen.add(row["hash"])
        return StoreChange(
            [row["id"] for row in rows],
            [row["position"] for row in rows],
            removed,
            removed_vectors,
            repeated,
            len(updates),
            superseded,
        )

    def _rows_by_external_id(self, external_ids: set[str]) -> dict[str, tuple[int, str]]:
        sql = f"SELECT external_id, id, hash FROM {TABLE} WHERE external_id IN"
        return {name: (row_id, digest) for name, row_id, digest in in_chunks(self.db, sql, sorted(external_ids))}

    def _delete_rows(self, ids: Sequence[int]) -> list[int]:
        """Delete documents and their passages; returns the vector ids of their further passages."""
        in_chunks(self.db, f"DELETE FROM {TABLE} WHERE id IN", ids)
        return self.passages.delete_documents(ids)

    def delete(self, ids: Sequence[int]) -> list[int]:
        """Delete documents by id, all or none: an id that is not stored raises UnknownDocumentError. Returns the
        vector ids to drop: the documents' own and those of their further passages."""
        ids = sorted(set(int(i) for i in ids))
        with self._guard(), self.db.atomic():
            present = {row[0] for row in in_chunks(self.db, f"SELECT id FROM {TABLE} WHERE id IN", ids)}
            missing = [i for i in ids if i not in present]
            if missing:
                raise UnknownDocumentError(
                    f"no document with id {', '.join(map(str, missing[:10]))}; nothing was deleted"
                )
            return ids + self._delete_rows(ids)

    def ids_for_external(self, external_ids: Sequence[str]) -> list[int]:
        """The documents that external ids name (one each); an unknown one raises UnknownDocumentError."""
        with self._guard():
            found = self._rows_by_external_id(set(external_ids))
        missing = [e for e in external_ids if e not in found]
        if missing:
            raise UnknownDocumentError(f"no document with external id {', '.join(missing[:10])}; nothing was deleted")
        return sorted({found[e][0] for e in external_ids})

    def other_vector_ids(self) -> np.ndarray:
        """Vector ids in the vector index that are no live document's own vector: tombstones (deleted documents
        awaiting compaction) and the further passages of split documents. Leaving them out leaves one vector per
        document, a split one's first passage (its title and opening): what clustering and mining compare."""
        return np.union1d(self.tombstones.ids(), self.passages.extra_ids())

    def get(self, ids: Sequence[int]) -> dict[int, StoredDocument]:
        """The stored documents for `ids` (unknown ids are left out), each with how many documents share its text."""
        sql = f"SELECT id, text, source, line, metadata, hash, external_id FROM {TABLE} WHERE id IN"
        with self._guard():
            rows = in_chunks(self.db, sql, sorted(set(int(i) for i in ids)))
            sharing = dict(
                in_chunks(
                    self.db,
                    f"SELECT hash, count(*) FROM {TABLE} WHERE hash IN",
                    sorted({row[5] for row in rows}),
                    "GROUP BY hash",
                )
            )
        return {
            row_id: StoredDocument(
                row_id, text, source, line, json.loads(metadata or "{}"), sharing.get(digest, 1), external_id
            )
            for row_id, text, source, line, metadata, digest, external_id in rows
        }

    def close(self) -> None:
        self.db.conn.close()


def _create_documents_table(db: sqlite_utils.Database, name: str) -> None:
    """The documents table: one row per document; external ids unique, hashes indexed to find repeats."""
    db[name].create(
        {"id": int, "external_id": str, "text": str, "source": str, "line": int, "metadata": str, "hash": str},
        pk="id",
    )
    db[name].create_index(["external_id"], unique=True, index_name=f"{name}_external_id")
    db[name].create_index(["hash"], index_name=f"{name}_hash")
    enable_keyword_index(db, name)
