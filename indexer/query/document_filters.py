"""Filters over the document store: which documents (and which of their passages' vectors) meet conditions on
their columns and metadata, as parameterised SQL (indexer/query/filter_sql.py), and which fields there are to filter on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np
from searchengine.indexer.errors import UnknownFieldError
from searchengine.indexer.query.filter_sql import (
    COLUMN_TYPES,
    JSON_KINDS,
    AnyOf,
    Condition,
    Filter,
    field_name,
    json_path,
    metadata_key,
    where_clause,
)
from searchengine.indexer.query.number_columns import NumberColumns
from searchengine.indexer.tables.field_indexes import indexed_keys, indexed_kinds
from searchengine.indexer.tables.passages import PassageTable

if TYPE_CHECKING:
    import sqlite_utils

DOCUMENTS = "documents"
PASSAGES = "passages"
COLUMN_FIELDS = tuple(COLUMN_TYPES)
"""Filterable fields that are columns; any other field name is looked up in the metadata JSON."""
CACHE_SIZE = 64
FIELDS_SAMPLE = 10_000
"""The latest documents whose metadata keys `fields` lists."""
"""Filters whose matching ids a read-only store keeps per read snapshot."""


class DocumentFilters:
    """Filtered lookups of one store. `cached`: keep, until `new_snapshot`, the ids each filter matched and the
    kinds of value each metadata field holds (a read-only store, whose snapshot changes only then)."""

    def __init__(
        self,
        db: sqlite_utils.Database,
        guard: Callable[[], AbstractContextManager[None]],
        passages: PassageTable,
        cached: bool,
    ) -> None:
        self.db = db
        self._guard = guard
        self._passages = passages
        self._cached = cached
        self._matches: dict[str, np.ndarray] | None = None
        """Ids matching each filter asked for, kept for the read snapshot (as Lucene's query cache keeps a filter's
        documents per segment): a filter repeated from query to query reads SQLite once."""
        self._kinds: dict[str, set[str]] | None = None
        self._columns: NumberColumns | None = None
        """Numeric fields as columns of the read snapshot: a new filter on numbers is answered without SQL."""
        self._indexed: frozenset[str] | None = None
        """The metadata fields with an index (indexer/tables/field_indexes.py), kept for the read snapshot."""
        self.new_snapshot()

    def new_snapshot(self) -> None:
        """Forget what was cached in the previous read snapshot."""
        self._matches = {} if self._cached else None
        self._kinds = {} if self._cached else None
        self._columns = NumberColumns(DOCUMENTS, self._fetch, self._field_kinds) if self._cached else None
        self._indexed = None

    def indexed(self) -> frozenset[str]:
        """The metadata fields with an index: read once per read snapshot by a read-only store, every time by a
        writer (whose transaction may have just made one)."""
        if self._indexed is not None:
            return self._indexed
        with self._guard():
            keys = indexed_keys(self.db)
        if self._cached:
            self._indexed = keys
        return keys

    def _fetch(self, sql: str, parameters: list[object]) -> list[tuple]:
        with self._guard():
            return self.db.execute(sql, parameters).fetchall()

    def matching_ids(self, filters: Sequence[Filter]) -> np.ndarray:
        """Ids of the documents meeting every filter (a Condition, or AnyOf conditions of which one must hold)."""
        key = repr(tuple(filters))  # not the filters: True == 1 and 2.0**70 == 2**70, which SQL may tell apart
        if self._matches is not None and key in self._matches:
            return self._matches[key]
        indexed = self.indexed()
        on_index = any(metadata_key(condition.field) in indexed for condition in _conditions(filters))
        ids = None if self._columns is None or on_index else self._columns.matching(filters)
        if ids is None:  # (an indexed field's index answers, rather than a column read whole)
            with self._guard():
                where, parameters = where_clause(filters, self._field_kinds, indexed)
                rows = self.db.execute(f"SELECT id FROM {DOCUMENTS} WHERE {where} ORDER BY id", parameters).fetchall()
            ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            ids.setflags(write=False)  # shared by the queries that repeat the filter
        if self._matches is not None:
            if len(self._matches) >= CACHE_SIZE:
                self._matches.pop(next(iter(self._matches)))
            self._matches[key] = ids
        return ids

    def passage_ids_matching(self, filters: Sequence[Filter]) -> np.ndarray:
        """Vector ids of the further passages (all but the first) of the documents meeting every filter: with
        `matching_ids`, every vector a filtered search may return."""
        with self._guard():
            if not self._passages.any():  # no document is split: nothing to look up
                return np.zeros(0, dtype=np.int64)
            where, parameters = where_clause(filters, self._field_kinds, self.indexed())
            rows = self.db.execute(
                f"SELECT id FROM {PASSAGES} WHERE id != document AND document IN "
                f"(SELECT id FROM {DOCUMENTS} WHERE {where}) ORDER BY id",
                parameters,
            ).fetchall()
        return np.array([row[0] for row in rows], dtype=np.int64)

    def fields(self, limit: int = 50) -> list[str]:
        """Filterable field names: the columns, then metadata keys found in the last FIELDS_SAMPLE documents (what
        a mistyped field's error names: reading every document's metadata for it took 5.8 s at 300,000 documents,
        minutes at millions; docs/benchmarks.md#the-store-at-10-million-rows)."""
        keys = self.db.execute(
            f"SELECT DISTINCT key FROM (SELECT metadata FROM {DOCUMENTS} ORDER BY id DESC LIMIT ?) AS latest, "
            "json_each(latest.metadata) ORDER BY key LIMIT ?",
            [FIELDS_SAMPLE, limit],
        ).fetchall()
        return [*COLUMN_FIELDS, *(field_name(key) for (key,) in keys)]

    def _field_kinds(self, key: str) -> set[str]:
        """The kinds of value ('number', 'text', 'list', ...) that metadata key `key` holds across documents; a key
        no document has raises UnknownFieldError naming the fields there are."""
        if self._kinds is not None and key in self._kinds:
            return self._kinds[key]
        if key in self.indexed():
            kinds = indexed_kinds(self.db, key)  # seeks in the field's index, not a pass over every document
        else:
            rows = self.db.execute(
                f"SELECT DISTINCT json_type(metadata, ?) FROM {DOCUMENTS} WHERE json_type(metadata, ?) IS NOT NULL",
                [json_path(key)] * 2,
            ).fetchall()
            kinds = {JSON_KINDS[kind] for (kind,) in rows}
        if not kinds:
            raise UnknownFieldError(f"no document has a field {field_name(key)!r}; fields: {', '.join(self.fields())}")
        if self._kinds is not None:
            self._kinds[key] = kinds
        return kinds


def _conditions(filters: Sequence[Filter]) -> list[Condition]:
    """Every condition of `filters`, those inside AnyOf included."""
    return [condition for item in filters for condition in (item.conditions if isinstance(item, AnyOf) else (item,))]
