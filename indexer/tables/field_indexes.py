"""Indexes on metadata fields, so a filter on a field reads the rows it matches instead of every row.

Without one, a filter on a metadata field runs json_extract over every document (and finds the kinds of value the
field holds with a second such pass): measured at 1M and more rows it costs seconds a filter, growing with the
store (docs/benchmarks.md#the-store-at-10-million-rows). A field named here gets an SQLite expression index on
(json_type, json_extract) of its path, which SQLite keeps in step with every insert, update and delete in the
same transaction; filters over the field (indexer/query/filter_sql.py) then seek it, and the kinds of value it
holds are eight seeks (`indexed_kinds`). The index is named after the field (hex of its UTF-8 bytes), so the
store's schema alone says which fields are indexed, and a copy of the store (backup, VACUUM) keeps them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from searchengine.indexer.errors import IndexerError
from searchengine.indexer.query.filter_sql import JSON_KINDS, METADATA_PREFIX, json_path, metadata_key, path_literal
from searchengine.indexer.tables.store_table import StoreTable

if TYPE_CHECKING:
    import sqlite_utils

DOCUMENTS = "documents"
PREFIX = f"{DOCUMENTS}_field_"
"""Index names: this, then the hex of the field name's UTF-8 bytes."""


def index_name(key: str) -> str:
    """The name of the index on metadata field `key`."""
    return PREFIX + key.encode("utf-8", "surrogatepass").hex()


def indexed_keys(db: sqlite_utils.Database) -> frozenset[str]:
    """The metadata fields the store has an index on."""
    rows = db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND substr(name, 1, ?) = ?",
        [DOCUMENTS, len(PREFIX), PREFIX],
    ).fetchall()
    return frozenset(bytes.fromhex(name[len(PREFIX) :]).decode("utf-8", "surrogatepass") for (name,) in rows)


def indexed_kinds(db: sqlite_utils.Database, key: str) -> set[str]:
    """The kinds of value ('number', 'text', ...) indexed field `key` holds, one seek in its index per JSON type."""
    path = path_literal(key)
    return {
        JSON_KINDS[json_type]
        for json_type in JSON_KINDS
        if db.execute(
            f"SELECT 1 FROM {DOCUMENTS} INDEXED BY {_quoted(index_name(key))} "
            f"WHERE json_type(metadata, {path}) = ? LIMIT 1",
            [json_type],
        ).fetchone()
    }


def _quoted(name: str) -> str:
    return f'"{name}"'


class FieldIndexes(StoreTable):
    """The indexes on metadata fields of one store; made and dropped inside the writer's transaction."""

    name = DOCUMENTS

    def keys(self) -> frozenset[str]:
        """The metadata fields that have an index."""
        with self._guard():
            return indexed_keys(self.db)

    def create(self, keys: Sequence[str]) -> list[str]:
        """Index each of the metadata fields `keys` that has none (one pass over the documents each); returns the
        fields newly indexed. A column (id, text, source...) or a name no path can hold is refused."""
        named = []
        for field in keys:
            key = metadata_key(field)
            if key is None:
                raise IndexerError(
                    f"{field!r} is a column of every document, not a metadata field; name a metadata field (a "
                    f"metadata key of that name is {METADATA_PREFIX}{field})"
                )
            json_path(key)  # refuses names a path cannot hold, before anything is written
            named.append(key)
        keys = named
        made = []
        with self._guard():
            present = indexed_keys(self.db)
            for key in dict.fromkeys(keys):
                if key in present:
                    continue
                path = path_literal(key)
                self.db.execute(
                    f"CREATE INDEX {_quoted(index_name(key))} ON {DOCUMENTS}"
                    f"(json_type(metadata, {path}), json_extract(metadata, {path}))"
                )
                made.append(key)
        return made

    def drop(self, keys: Sequence[str]) -> list[str]:
        """Drop the indexes on the metadata fields `keys` (those without one are left alone); returns the fields
        whose index was dropped."""
        dropped = []
        with self._guard():
            present = indexed_keys(self.db)
            for key in dict.fromkeys(metadata_key(field) or field for field in keys):
                if key in present:
                    self.db.execute(f"DROP INDEX {_quoted(index_name(key))}")
                    dropped.append(key)
        return dropped
