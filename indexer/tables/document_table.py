"""The documents table of the document store: one row per document, with its own id, external id, origin,
metadata and the hash of its text. Identical texts are separate documents; the hash only finds repeats (to count
them and to encode a text once), it never merges them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np
from searchengine.indexer.errors import UnknownDocumentError
from searchengine.indexer.tables import build_hashes
from searchengine.indexer.tables.counters import (
    DISTINCT_TEXTS,
    count_distinct_texts,
    pause_distinct_texts,
    read_counter,
)
from searchengine.indexer.tables.documents import StoredDocument
from searchengine.indexer.tables.keyword_table import enable_keyword_index
from searchengine.indexer.tables.row_checksums import record_row_checksums
from searchengine.indexer.tables.sql_chunks import in_chunks
from searchengine.indexer.tables.store_table import StoreTable
from searchengine.indexer.tables.stored_metadata import readable_metadata

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "documents"
COLUMNS = ("id", "external_id", "text", "source", "line", "metadata", "hash")
"""A document row's columns, in the table's order."""
NEW_ROWS = "new_documents"
"""The temporary table (the connection's own, never in the file) that an add's new rows pass through."""


def create_documents_table(db: sqlite_utils.Database, name: str = TABLE) -> None:
    """The documents table and its keyword index: external ids unique, hashes indexed to find repeats."""
    db[name].create(
        {"id": int, "external_id": str, "text": str, "source": str, "line": int, "metadata": str, "hash": str},
        pk="id",
    )
    db[name].create_index(["external_id"], unique=True, index_name=f"{name}_external_id")
    create_hash_index(db, name)
    enable_keyword_index(db, name)


def create_hash_index(db: sqlite_utils.Database, name: str = TABLE) -> None:
    """The index of text hashes that finds repeats (and counts a hit's sharers)."""
    db[name].create_index(["hash"], index_name=f"{name}_hash")


def unknown_external_ids(missing: Sequence[str]) -> UnknownDocumentError:
    """The error of a delete by external ids that names documents none has (the first ten of them, in the order
    given, each once): every index's, a cluster's too, so the delete is refused alike (HTTP 404)."""
    named = list(dict.fromkeys(missing))[:10]
    return UnknownDocumentError(f"no document with external id {', '.join(named)}; nothing was deleted")


class DocumentTable(StoreTable):
    """Document rows of one store. `cached`: count the documents once per read snapshot (`new_snapshot`), for a
    read-only store."""

    name = TABLE

    def __init__(
        self, db: sqlite_utils.Database, guard: Callable[[], AbstractContextManager[None]], cached: bool
    ) -> None:
        super().__init__(db, guard)
        self._cached = cached
        self._count: int | None = None
        self.building = False
        """True while a build fills this (new) store: the hash index waits for `finish_build`
        (indexer/tables/build_hashes.py), and so does the count of distinct texts, kept through it."""
        self._distinct_paused = False

    def new_snapshot(self) -> None:
        self._count = None

    def count(self) -> int:
        """Number of documents stored: the kept counter (indexer/tables/counters.py), or count(*) in a store written
        before it, read once per read snapshot by a read-only store."""
        if self._count is not None:
            return self._count
        with self._guard():
            count = read_counter(self.db, "documents")
            if count is None:
                count = int(self.db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])
        if self._cached:
            self._count = count
        return count

    def largest_id(self, table: str = TABLE) -> int:
        """The largest id in the documents table (or in `table`, an older one being upgraded), -1 when empty."""
        return int(self.db.execute(f"SELECT coalesce(max(id), -1) FROM {table}").fetchone()[0])

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
                row_id, text, source, line, readable_metadata(metadata), sharing.get(digest, 1), external_id
            )
            for row_id, text, source, line, metadata, digest, external_id in rows
        }

    def ids(self) -> np.ndarray:
        """Every stored document's id, in order."""
        with self._guard():
            rows = self.db.execute(f"SELECT id FROM {TABLE} ORDER BY id").fetchall()
        return np.array([row[0] for row in rows], dtype=np.int64)

    def present(self, ids: Sequence[int]) -> set[int]:
        """Which of `ids` are stored documents."""
        with self._guard():
            return {row[0] for row in in_chunks(self.db, f"SELECT id FROM {TABLE} WHERE id IN", ids)}

    def repeats(self) -> int:
        """Documents whose text an earlier stored document already has: the kept counts (two rows), or a read of
        the whole hash index in a store that keeps no count of distinct texts (before migration 7)."""
        with self._guard():
            distinct = read_counter(self.db, DISTINCT_TEXTS)
            if distinct is not None:
                return self.count() - distinct
            return int(self.db.execute(f"SELECT count(*) - count(DISTINCT hash) FROM {TABLE}").fetchone()[0])

    def known_hashes(self, hashes: Sequence[str]) -> set[str]:
        """Which of the text hashes `hashes` some stored document has."""
        if self.building:
            return build_hashes.known(self.db, TABLE, hashes)
        sql = f"SELECT DISTINCT hash FROM {TABLE} WHERE hash IN"
        return {row[0] for row in in_chunks(self.db, sql, sorted(set(hashes)))}

    def external_ids(self) -> list[str]:
        """Every stored external id (documents added without one are left out), in id order."""
        with self._guard():
            rows = self.db.execute(f"SELECT external_id FROM {TABLE} WHERE external_id IS NOT NULL ORDER BY id")
            return [row[0] for row in rows]

    def by_external_id(self, external_ids: set[str]) -> dict[str, tuple[int, str]]:
        """External id -> (id, text hash) of the stored documents that `external_ids` name."""
        sql = f"SELECT external_id, id, hash FROM {TABLE} WHERE external_id IN"
        return {name: (row_id, digest) for name, row_id, digest in in_chunks(self.db, sql, sorted(external_ids))}

    def ids_for_external(self, external_ids: Sequence[str]) -> list[int]:
        """The documents that external ids name (one each); an unknown one raises UnknownDocumentError."""
        with self._guard():
            found = self.by_external_id(set(external_ids))
        missing = [e for e in external_ids if e not in found]
        if missing:
            raise unknown_external_ids(missing)
        return sorted({found[e][0] for e in external_ids})

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

    def insert(self, rows: Sequence[dict[str, Any]]) -> None:
        """Store new rows (id, external_id, text, source, line, metadata, hash), inside the caller's transaction,
        with their checksums.

        The rows go in by one statement, through a temporary table: the keyword index (FTS5) writes the words it
        holds back as a new segment of its index before every statement of a transaction, and merges those
        segments later, so a statement per row, or sqlite-utils' 142 rows per statement (SQLite's 999
        parameters), made each add write and merge many small segments
        (docs/benchmarks.md#the-store-at-10-million-rows).
        The temporary table has no column types, so each value reaches the documents table as given."""
        columns = ", ".join(COLUMNS)
        self.db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {NEW_ROWS} ({columns})")
        self.db.conn.executemany(
            f"INSERT INTO temp.{NEW_ROWS} ({columns}) VALUES ({', '.join('?' * len(COLUMNS))})",
            ([row[column] for column in COLUMNS] for row in rows),
        )
        self.db.execute(f"INSERT INTO {TABLE} ({columns}) SELECT {columns} FROM temp.{NEW_ROWS} ORDER BY id")
        self.db.execute(f"DELETE FROM temp.{NEW_ROWS}")
        if self.building:
            build_hashes.record(self.db, [(row["id"], row["hash"]) for row in rows])
        record_row_checksums(self.db, [row["id"] for row in rows])

    def start_build(self) -> None:
        """Fill this store without its hash index, made again by `finish_build` (indexer/tables/build_hashes.py):
        for a store no reader opens before then. Inside the caller's transaction."""
        build_hashes.start(self.db, TABLE, f"{TABLE}_hash")
        self._distinct_paused = pause_distinct_texts(self.db)
        self.building = True

    def finish_build(self) -> None:
        """Make the hash index again, sorted in one pass, inside the caller's transaction; a no-op unless building."""
        if not self.building:
            return
        create_hash_index(self.db)
        if self._distinct_paused:
            count_distinct_texts(self.db)
        build_hashes.finish(self.db)
        self.building = False

    def update_origins(self, updates: Sequence[tuple[str | None, int | None, str, str]]) -> None:
        """Give documents new (source, line, metadata), by external id (the last of each tuple); no statement runs
        for none (an add of new documents only)."""
        if not updates:
            return
        self.db.conn.executemany(
            f"UPDATE {TABLE} SET source = ?, line = ?, metadata = ? WHERE external_id = ?", updates
        )
        changed = in_chunks(self.db, f"SELECT id FROM {TABLE} WHERE external_id IN", [update[3] for update in updates])
        record_row_checksums(self.db, [row[0] for row in changed])

    def delete(self, ids: Sequence[int]) -> None:
        """Delete the rows `ids`, inside the caller's transaction (their passages are the store's to delete)."""
        in_chunks(self.db, f"DELETE FROM {TABLE} WHERE id IN", ids)
