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

import sqlite_utils

from indexer.errors import IndexerError

TABLE = "documents"


@dataclass(frozen=True)
class Document:
    """A text to index, with its origin and any metadata that came with it."""

    text: str
    source: str | None = None
    line: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

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
        if TABLE in self.db.table_names():
            return
        if not writable:
            raise IndexerError(f"document store {self.path} has no documents table; rebuild the index")
        self.db[TABLE].create(
            {"id": int, "text": str, "source": str, "line": int, "metadata": str, "hash": str, "count": int},
            pk="id",
        )
        self.db[TABLE].create_index(["hash"], unique=True)

    def _corrupt(self, exc: Exception) -> IndexerError:
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

    def add(self, documents: Sequence[Document]) -> tuple[list[int], list[int]]:
        """Store the texts not seen before and count repeats of the others.

        Returns (ids, positions): the new rows' ids, and for each the position in `documents` of the text it
        holds, so the caller embeds only those.
        """
        hashes = [document.content_hash for document in documents]
        with self._guard(), self.db.conn:
            known = self._ids_by_hash(set(hashes))
            next_id = int(self.db.execute(f"SELECT coalesce(max(id), -1) + 1 FROM {TABLE}").fetchone()[0])
            new_rows: dict[str, dict[str, Any]] = {}
            repeats: dict[str, int] = {}
            positions: list[int] = []
            for position, (document, digest) in enumerate(zip(documents, hashes)):
                if digest in known or digest in new_rows:
                    repeats[digest] = repeats.get(digest, 0) + 1
                    continue
                new_rows[digest] = {
                    "id": next_id + len(new_rows),
                    "text": document.text,
                    "source": document.source,
                    "line": document.line,
                    "metadata": json.dumps(document.metadata, ensure_ascii=False),
                    "hash": digest,
                    "count": 1,
                }
                positions.append(position)
            self.db[TABLE].insert_all(new_rows.values(), batch_size=1000)
            self.db.conn.executemany(
                f"UPDATE {TABLE} SET count = count + ? WHERE hash = ?",
                [(extra, digest) for digest, extra in repeats.items()],
            )
        return [row["id"] for row in new_rows.values()], positions

    def _ids_by_hash(self, hashes: set[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        ordered = sorted(hashes)
        for start in range(0, len(ordered), 500):
            chunk = ordered[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT hash, id FROM {TABLE} WHERE hash IN ({marks})", chunk).fetchall())
        return found

    def get(self, ids: Sequence[int]) -> dict[int, StoredDocument]:
        """The stored rows for `ids` (unknown ids are left out)."""
        rows: dict[int, StoredDocument] = {}
        unique = sorted(set(int(i) for i in ids))
        with self._guard():
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in self.db.query(
                    f"SELECT id, text, source, line, metadata, count FROM {TABLE} WHERE id IN ({marks})", chunk
                ):
                    rows[row["id"]] = StoredDocument(
                        id=row["id"],
                        text=row["text"],
                        source=row["source"],
                        line=row["line"],
                        metadata=json.loads(row["metadata"] or "{}"),
                        count=row["count"],
                    )
        return rows

    def close(self) -> None:
        self.db.conn.close()
