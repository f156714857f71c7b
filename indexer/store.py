"""The SQLite document store (through sqlite-utils): one row per distinct text, with where it came from."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from searchengine.indexer.errors import IndexerError, UnknownDocumentError
from searchengine.indexer.filter_sql import COLUMN_TYPES, JSON_KINDS, Filter, json_path, where_clause

TABLE = "documents"
EXTERNAL_IDS_TABLE = "external_ids"
"""User-given ids (e.g. a .jsonl "id" field) -> the row holding that document's current text, for upserts."""
TOMBSTONES_TABLE = "tombstones"
"""Ids whose vectors are still in an index type that cannot delete in place (HNSW, PQ) until `compact`."""
COLUMN_FIELDS = tuple(COLUMN_TYPES)
"""Filterable fields that are columns; any other field name is looked up in the metadata JSON."""
CLUSTERING_TABLE = "clustering"
"""One row: how the stored clustering was made."""
CLUSTER_MEMBERS_TABLE = "cluster_members"
"""One row per clustered document: its cluster and its cosine to the cluster's centroid."""
DUPLICATES_TABLE = "duplicates"
"""Near-duplicates marked by `searchengine mine --dedupe`: a document, the earlier one it duplicates, their cosine."""


@dataclass(frozen=True)
class Document:
    """A text to index, with its origin and any metadata that came with it."""

    text: str
    source: str | None = None
    line: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    external_id: str | None = None
    """A user-given id: adding a document with an id already stored replaces that document (upsert)."""

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoredDocument:
    """A row of the store: `count` is how many times the same text was indexed."""

    id: int
    text: str
    source: str | None
    line: int | None
    metadata: dict[str, Any]
    count: int


@dataclass(frozen=True)
class StoreChange:
    """What `DocumentStore.add` did: rows to embed, and rows whose vectors must go."""

    ids: list[int]
    """Ids of the new rows."""
    positions: list[int]
    """For each new row, the position in the input of the text it holds."""
    removed: list[int]
    """Rows that upserts left with no occurrence: deleted from the store, their vectors to be dropped."""

    def __iter__(self) -> Iterator[list[int]]:
        return iter((self.ids, self.positions, self.removed))


@dataclass(frozen=True)
class ClusteringRecord:
    """The stored clustering's description: its method and parameters, and how many clusters and documents."""

    method: str
    parameters: dict[str, Any]
    clusters: int
    documents: int
    """Documents in some cluster (community detection leaves outliers out; later additions are in none)."""
    created_at: str


class DocumentStore:
    """Texts by id; identical texts are stored once and counted. Opened read-only unless `writable`."""

    def __init__(self, path: Path, writable: bool = False) -> None:
        self.path = path
        try:
            if writable:
                connection = sqlite3.connect(str(path))
            else:
                connection = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
            self.db = sqlite_utils.Database(connection)
            with self._guard():
                self._create_table_if_missing(writable)
        except sqlite3.Error as exc:
            raise self._corrupt(exc) from None

    def _create_table_if_missing(self, writable: bool) -> None:
        tables = set(self.db.table_names())
        if TABLE in tables and not writable:
            return
        if not writable:
            raise IndexerError(f"document store {self.path} has no documents table; rebuild the index")
        if TABLE not in tables:
            self.db[TABLE].create(
                {"id": int, "text": str, "source": str, "line": int, "metadata": str, "hash": str, "count": int},
                pk="id",
            )
            self.db[TABLE].create_index(["hash"], unique=True)
        if EXTERNAL_IDS_TABLE not in tables:
            self.db[EXTERNAL_IDS_TABLE].create({"external_id": str, "id": int}, pk="external_id")
            self.db[EXTERNAL_IDS_TABLE].create_index(["id"])
        if TOMBSTONES_TABLE not in tables:
            self.db[TOMBSTONES_TABLE].create({"id": int}, pk="id")

    def _corrupt(self, exc: Exception) -> IndexerError:
        """The one-line error for a failed SQLite call: a full disk or a permission problem is not corruption."""
        text = str(exc)
        if "disk is full" in text:
            return IndexerError(
                f"no space left on device writing {self.path}: free some space and run the command again; the "
                "index is as it was before"
            )
        if "readonly" in text or "unable to open" in text:
            return IndexerError(
                f"cannot open or write {self.path} ({text}): check the permissions of the file and its directory"
            )
        return IndexerError(f"document store {self.path} is corrupt or unreadable ({exc}); rebuild the index")

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None

    def count(self) -> int:
        """Number of distinct texts stored."""
        with self._guard():
            return self.db[TABLE].count

    def total(self) -> int:
        """Number of texts indexed, duplicates included."""
        with self._guard():
            return int(self.db.execute(f"SELECT coalesce(sum(count), 0) FROM {TABLE}").fetchone()[0])

    def add(self, documents: Sequence[Document]) -> StoreChange:
        """Store texts not seen before, count repeats, and point each external id at its new text (upsert).

        A text stored under an external id that now names another text loses one occurrence; a row left with
        none is deleted and reported in `removed`, so the caller drops its vector.
        """
        hashes = [document.content_hash for document in documents]
        with self._guard(), self.db.conn:
            known = self._ids_by_hash(set(hashes))
            external = self._ids_by_external_id({d.external_id for d in documents if d.external_id is not None})
            next_id = int(self.db.execute(f"SELECT coalesce(max(id), -1) + 1 FROM {TABLE}").fetchone()[0])
            new_rows: dict[str, dict[str, Any]] = {}
            new_by_id: dict[int, dict[str, Any]] = {}
            delta: dict[int, int] = {}
            moved: dict[str, int] = {}

            def bump(row_id: int, amount: int) -> None:
                if row_id in new_by_id:
                    new_by_id[row_id]["count"] += amount
                else:
                    delta[row_id] = delta.get(row_id, 0) + amount

            for position, (document, digest) in enumerate(zip(documents, hashes)):
                target = known.get(digest, new_rows[digest]["id"] if digest in new_rows else None)
                previous = external.get(document.external_id) if document.external_id is not None else None
                if previous is not None and previous == target:
                    continue  # the same id with the same text again: nothing changes
                if target is None:
                    target = next_id + len(new_rows)
                    new_rows[digest] = new_by_id[target] = {
                        "id": target,
                        "text": document.text,
                        "source": document.source,
                        "line": document.line,
                        "metadata": json.dumps(document.metadata, ensure_ascii=False),
                        "hash": digest,
                        "count": 1,
                        "position": position,
                    }
                else:
                    bump(target, 1)
                if previous is not None:
                    bump(previous, -1)
                if document.external_id is not None:
                    external[document.external_id] = moved[document.external_id] = target
            kept = [row for row in new_rows.values() if row["count"] > 0]
            self.db[TABLE].insert_all(
                ({key: value for key, value in row.items() if key != "position"} for row in kept), batch_size=1000
            )
            self.db.conn.executemany(
                f"UPDATE {TABLE} SET count = count + ? WHERE id = ?", [(amount, i) for i, amount in delta.items()]
            )
            removed = [i for i, amount in delta.items() if amount < 0]
            emptied = self._in_chunks(f"SELECT id FROM {TABLE} WHERE count <= 0 AND id IN", removed)
            removed = [row[0] for row in emptied]
            self._delete_rows(removed)
            self.db[EXTERNAL_IDS_TABLE].upsert_all(
                ({"external_id": key, "id": value} for key, value in moved.items()), pk="external_id"
            )
        return StoreChange([row["id"] for row in kept], [row["position"] for row in kept], removed)

    def _in_chunks(self, sql: str, values: Sequence[Any]) -> list[tuple]:
        """Run `sql (?, ?, ...)` (a SELECT or DELETE ending in `IN`) over `values` in chunks that stay under
        SQLite's parameter limit; returns the rows of all chunks."""
        rows: list[tuple] = []
        values = list(values)
        for start in range(0, len(values), 500):
            chunk = values[start : start + 500]
            rows.extend(self.db.execute(f"{sql} ({','.join('?' * len(chunk))})", chunk).fetchall())
        return rows

    def _ids_by_external_id(self, external_ids: set[str]) -> dict[str, int]:
        sql = f"SELECT external_id, id FROM {EXTERNAL_IDS_TABLE} WHERE external_id IN"
        return dict(self._in_chunks(sql, sorted(external_ids)))

    def _delete_rows(self, ids: Sequence[int]) -> None:
        for sql in (f"DELETE FROM {TABLE} WHERE id IN", f"DELETE FROM {EXTERNAL_IDS_TABLE} WHERE id IN"):
            self._in_chunks(sql, ids)

    def delete(self, ids: Sequence[int]) -> None:
        """Delete documents by id, all or none: an id that is not stored raises UnknownDocumentError."""
        ids = sorted(set(int(i) for i in ids))
        with self._guard(), self.db.conn:
            present = {row[0] for row in self._in_chunks(f"SELECT id FROM {TABLE} WHERE id IN", ids)}
            missing = [i for i in ids if i not in present]
            if missing:
                raise UnknownDocumentError(
                    f"no document with id {', '.join(map(str, missing[:10]))}; nothing was deleted"
                )
            self._delete_rows(ids)

    def ids_for_external(self, external_ids: Sequence[str]) -> list[int]:
        """The rows that external ids name; an unknown one raises UnknownDocumentError."""
        with self._guard():
            found = self._ids_by_external_id(set(external_ids))
        missing = [e for e in external_ids if e not in found]
        if missing:
            raise UnknownDocumentError(f"no document with external id {', '.join(missing[:10])}; nothing was deleted")
        return sorted({found[e] for e in external_ids})

    def matching_ids(self, filters: Sequence[Filter]) -> np.ndarray:
        """Ids of the documents meeting every filter (a Condition, or AnyOf conditions of which one must hold),
        as parameterised SQL over columns and metadata (indexer/filter_sql.py)."""
        with self._guard():
            where, parameters = where_clause(filters, self._field_kinds)
            rows = self.db.execute(f"SELECT id FROM {TABLE} WHERE {where} ORDER BY id", parameters).fetchall()
        return np.array([row[0] for row in rows], dtype=np.int64)

    def _field_kinds(self, key: str) -> set[str]:
        """The kinds of value ('number', 'text', 'list', ...) that metadata key `key` holds across documents; a key
        no document has raises IndexerError naming the fields there are."""
        rows = self.db.execute(
            f"SELECT DISTINCT json_type(metadata, ?) FROM {TABLE} WHERE json_type(metadata, ?) IS NOT NULL",
            [json_path(key)] * 2,
        ).fetchall()
        if not rows:
            raise IndexerError(f"no document has a field {key!r}; fields: {', '.join(self.fields())}")
        return {JSON_KINDS[kind] for (kind,) in rows}

    def fields(self, limit: int = 50) -> list[str]:
        """Filterable field names: the columns, then metadata keys found in the documents."""
        keys = self.db.execute(
            f"SELECT DISTINCT key FROM {TABLE}, json_each({TABLE}.metadata) ORDER BY key LIMIT ?", [limit]
        ).fetchall()
        return [*COLUMN_FIELDS, *(key for (key,) in keys)]

    def add_tombstones(self, ids: Sequence[int]) -> None:
        with self._guard(), self.db.conn:
            self.db[TOMBSTONES_TABLE].insert_all(({"id": int(i)} for i in ids), replace=True)

    def tombstones(self) -> np.ndarray:
        """Ids deleted from the store whose vectors are still in the vector index."""
        with self._guard():
            if TOMBSTONES_TABLE not in self.db.table_names():
                return np.zeros(0, dtype=np.int64)
            rows = self.db.execute(f"SELECT id FROM {TOMBSTONES_TABLE} ORDER BY id").fetchall()
        return np.array([row[0] for row in rows], dtype=np.int64)

    def clear_tombstones(self) -> None:
        with self._guard(), self.db.conn:
            self.db.execute(f"DELETE FROM {TOMBSTONES_TABLE}")

    def mark_duplicates(self, marks: Sequence[tuple[int, int, float]]) -> None:
        """Replace every near-duplicate mark with `marks`: (id, id of the earlier document it duplicates, cosine)."""
        rows = [(int(i), int(original), float(score)) for i, original, score in marks]
        with self._guard(), self.db.conn:
            self.db.execute(f"DROP TABLE IF EXISTS {DUPLICATES_TABLE}")
            self.db[DUPLICATES_TABLE].create({"id": int, "duplicate_of": int, "score": float}, pk="id")
            self.db.conn.executemany(
                f"INSERT INTO {DUPLICATES_TABLE} (id, duplicate_of, score) VALUES (?, ?, ?)", rows
            )

    def duplicates(self) -> dict[int, int]:
        """Each document marked a near-duplicate -> the earlier document it duplicates (deleted ones left out)."""
        with self._guard():
            if DUPLICATES_TABLE not in self.db.table_names():
                return {}
            rows = self.db.execute(
                f"SELECT m.id, m.duplicate_of FROM {DUPLICATES_TABLE} AS m JOIN {TABLE} AS d ON d.id = m.id "
                f"JOIN {TABLE} AS o ON o.id = m.duplicate_of ORDER BY m.id"
            ).fetchall()
        return dict(rows)

    def _ids_by_hash(self, hashes: set[str]) -> dict[str, int]:
        return dict(self._in_chunks(f"SELECT hash, id FROM {TABLE} WHERE hash IN", sorted(hashes)))

    def get(self, ids: Sequence[int]) -> dict[int, StoredDocument]:
        """The stored rows for `ids` (unknown ids are left out)."""
        sql = f"SELECT id, text, source, line, metadata, count FROM {TABLE} WHERE id IN"
        with self._guard():
            rows = self._in_chunks(sql, sorted(set(int(i) for i in ids)))
        return {
            row_id: StoredDocument(row_id, text, source, line, json.loads(metadata or "{}"), count)
            for row_id, text, source, line, metadata, count in rows
        }

    def save_clustering(
        self,
        method: str,
        parameters: dict[str, Any],
        ids: Sequence[int],
        clusters: Sequence[int],
        centrality: Sequence[float],
        created_at: str,
    ) -> None:
        """Replace any stored clustering: document `ids[i]` is in cluster `clusters[i]`, at cosine `centrality[i]`
        to that cluster's centroid."""
        rows = [(int(i), int(c), float(s)) for i, c, s in zip(ids, clusters, centrality)]
        with self._guard(), self.db.conn:
            for table in (CLUSTERING_TABLE, CLUSTER_MEMBERS_TABLE):
                self.db.execute(f"DROP TABLE IF EXISTS {table}")
            self.db[CLUSTERING_TABLE].insert(
                {
                    "method": method,
                    "parameters": json.dumps(parameters),
                    "clusters": len({row[1] for row in rows}),
                    "documents": len(rows),
                    "created_at": created_at,
                }
            )
            self.db[CLUSTER_MEMBERS_TABLE].create({"document": int, "cluster": int, "centrality": float}, pk="document")
            self.db.conn.executemany(
                f"INSERT INTO {CLUSTER_MEMBERS_TABLE} (document, cluster, centrality) VALUES (?, ?, ?)", rows
            )
            self.db[CLUSTER_MEMBERS_TABLE].create_index(["cluster", "centrality"])

    def clustering(self) -> ClusteringRecord | None:
        """How the stored clustering was made, or None when the index has not been clustered."""
        with self._guard():
            if CLUSTERING_TABLE not in self.db.table_names():
                return None
            row = next(iter(self.db.query(f"SELECT * FROM {CLUSTERING_TABLE}")))
        return ClusteringRecord(
            method=row["method"],
            parameters=json.loads(row["parameters"]),
            clusters=row["clusters"],
            documents=row["documents"],
            created_at=row["created_at"],
        )

    def clusters_of(self, ids: Sequence[int]) -> dict[int, int]:
        """The stored cluster of each of `ids` that is in one (empty when there is no clustering)."""
        with self._guard():
            if CLUSTER_MEMBERS_TABLE not in self.db.table_names():
                return {}
            sql = f"SELECT document, cluster FROM {CLUSTER_MEMBERS_TABLE} WHERE document IN"
            return dict(self._in_chunks(sql, sorted(set(int(i) for i in ids))))

    def cluster_members(self) -> dict[int, list[int]]:
        """Every stored cluster's document ids, most central first, by cluster id (empty without a clustering).

        Documents deleted since the clustering was made are left out.
        """
        members: dict[int, list[int]] = {}
        with self._guard():
            if CLUSTER_MEMBERS_TABLE not in self.db.table_names():
                return members
            rows = self.db.execute(
                f"SELECT m.cluster, m.document FROM {CLUSTER_MEMBERS_TABLE} AS m JOIN {TABLE} AS d "
                "ON d.id = m.document ORDER BY m.cluster, m.centrality DESC, m.document"
            )
            for cluster, document in rows:
                members.setdefault(cluster, []).append(document)
        return members

    def close(self) -> None:
        self.db.conn.close()
